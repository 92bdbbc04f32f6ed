"""The receipts' JCS and JWS against their RFCs' own examples (RFC 8785, RFC 8037)."""

from __future__ import annotations

import json
import struct

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from relay.receipts.jcs import canonical, number
from relay.receipts.jws import BadJWS, b64url_decode, parse, sign, verify
from relay.receipts.keys import jwk_of, key_id

# RFC 8785 §3.2.2: the sample input and its canonical form.
_JCS_INPUT = r"""{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}"""
_JCS_OUTPUT = (
    '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
    '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
)

# RFC 8785 appendix B: IEEE 754 doubles (hex) and how JCS writes them.
_NUMBERS = {
    "0000000000000000": "0",
    "8000000000000000": "0",
    "0000000000000001": "5e-324",
    "8000000000000001": "-5e-324",
    "7fefffffffffffff": "1.7976931348623157e+308",
    "ffefffffffffffff": "-1.7976931348623157e+308",
    "4340000000000000": "9007199254740992",
    "c340000000000000": "-9007199254740992",
    "4430000000000000": "295147905179352830000",
    "44b52d02c7e14af5": "9.999999999999997e+22",
    "44b52d02c7e14af6": "1e+23",
    "44b52d02c7e14af7": "1.0000000000000001e+23",
    "444b1ae4d6e2ef4e": "999999999999999700000",
    "444b1ae4d6e2ef4f": "999999999999999900000",
    "444b1ae4d6e2ef50": "1e+21",
    "3eb0c6f7a0b5ed8c": "9.999999999999997e-7",
    "3eb0c6f7a0b5ed8d": "0.000001",
    "41b3de4355555553": "333333333.3333332",
    "41b3de4355555554": "333333333.33333325",
    "41b3de4355555555": "333333333.3333333",
    "41b3de4355555556": "333333333.3333334",
    "41b3de4355555557": "333333333.33333343",
    "becbf647612f3696": "-0.0000033333333333333333",
    "43143ff3c1cb0959": "1424953923781206.2",
}

# RFC 8037 appendix A: the Ed25519 key, its thumbprint, and the JWS of A.4.
_D = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"
_X = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
_THUMBPRINT = "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
_JWS = (
    "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc"
    ".hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"
)


def test_jcs_writes_the_rfc_sample_as_the_rfc_does() -> None:
    assert canonical(json.loads(_JCS_INPUT)).decode() == _JCS_OUTPUT


@pytest.mark.parametrize(("bits", "text"), sorted(_NUMBERS.items()))
def test_jcs_writes_each_rfc_number_as_the_rfc_does(bits: str, text: str) -> None:
    assert number(struct.unpack(">d", bytes.fromhex(bits))[0]) == text


def test_jcs_sorts_members_by_utf16_code_units() -> None:
    # RFC 8785 §3.2.3: the sorting example (an emoji, a surrogate pair, sorts before U+FB33).
    value = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\U0001f600": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
    }
    keys = list(json.loads(canonical(value)))
    assert keys == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 2**53 + 1, "\ud800", {1: "x"}, b"x"])
def test_jcs_refuses_what_json_cannot_carry(bad: object) -> None:
    with pytest.raises(ValueError, match="JCS"):
        canonical(bad)


def _rfc_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(b64url_decode(_D))


def test_the_rfc_key_has_the_rfc_x_and_thumbprint() -> None:
    public = _rfc_key().public_key()
    assert jwk_of(public)["x"] == _X
    assert key_id(public) == _THUMBPRINT


def test_jws_signs_the_rfc_example_byte_for_byte() -> None:
    token = sign(b"Example of Ed25519 signing", _rfc_key(), header={"alg": "EdDSA"})
    assert token == _JWS
    assert verify(token, _rfc_key().public_key()).payload == b"Example of Ed25519 signing"


@pytest.mark.parametrize(
    ("token", "problem"),
    [
        (_JWS[:-2] + "AA", "signature"),
        ("eyJhbGciOiJub25lIn0.e30.", "alg"),  # {"alg":"none"}
        ("eyJhbGciOiJIUzI1NiJ9.e30.AAAA", "alg"),  # {"alg":"HS256"}
        (_JWS + ".x", "three"),
        (_JWS.replace(".", "=.", 1), "base64url"),
    ],
)
def test_jws_refuses_what_is_not_an_ed25519_signature_of_it(token: str, problem: str) -> None:
    with pytest.raises(BadJWS, match=problem):
        verify(token, _rfc_key().public_key())


def test_jws_parse_keeps_the_signing_input_as_sent() -> None:
    parsed = parse(_JWS)
    assert parsed.header == {"alg": "EdDSA"}
    assert parsed.signing_input == _JWS.rsplit(".", 1)[0].encode()
