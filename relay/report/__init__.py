"""The approvals report: figures from the verified receipts, as a terminal table and a page.

``relay report`` prints it; ``GET /report`` on the relay serves it (operator credential).
"""

from relay.report.evidence import Evidence, read_bundle, verified
from relay.report.figures import DeciderTally, Ending, Figures, RepeatedCall, RuleFor, figures

__all__ = [
    "DeciderTally",
    "Ending",
    "Evidence",
    "Figures",
    "RepeatedCall",
    "RuleFor",
    "figures",
    "read_bundle",
    "verified",
]
