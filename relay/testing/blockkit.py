"""Slack's Block Kit rules as data: every block, element and composition object a message may
hold, its fields, which are required, and their kinds and bounds.

Written from Slack's Block Kit reference (docs.slack.dev/reference/block-kit: blocks, block
elements, composition objects). A field not listed for its kind is refused, as Slack's own
schema refuses it (``slack_sdk.models`` drops it silently instead, which is why the fake does
not rely on it alone). ``relay.testing.blockkit_check`` applies these rules.

Lengths are counted in UTF-16 code units (``blockkit_check.code_units``: an emoji outside the
Basic Multilingual Plane counts 2): Slack's reference gives its limits in "characters" without
a unit, and code units are never fewer than code points, so the fake refuses every text Slack
could refuse.
"""

from __future__ import annotations

from .blockkit_types import Bool, Enum, Int, ListOf, Loose, Obj, Rule, Shape, Str, Text

__all__ = [
    "ACTIONS_ELEMENTS",
    "BLOCKS",
    "COMPOSITIONS",
    "ELEMENTS",
    "INPUT_ELEMENTS",
    "SECTION_ACCESSORIES",
    "TEXT_FIELDS",
]


def _req(*names: str) -> frozenset[str]:
    return frozenset(names)


def _kinds(*names: str) -> frozenset[str]:
    return frozenset(names)


PLAIN = frozenset({"plain_text"})
ACTION_ID = Str(max=255)
URL = Str(max=3000)
PLACEHOLDER = Text(max=150, kinds=PLAIN)
CONFIRM = Obj(shape="confirm")
DISPATCH_CONFIG = Obj(shape="dispatch_action_config")
FOCUS = Bool()
MAX_SELECTED = Int(min=1)
OPTION = Obj(shape="option")
OPTION_ANY_TEXT = Obj(shape="option_mrkdwn")
USER_ID = Str(max=255)

_SELECT_COMMON: dict[str, Rule] = {
    "action_id": ACTION_ID,
    "confirm": CONFIRM,
    "focus_on_load": FOCUS,
    "placeholder": PLACEHOLDER,
}
_MULTI = {"max_selected_items": MAX_SELECTED}
_TEXT_INPUT_COMMON: dict[str, Rule] = {
    "action_id": ACTION_ID,
    "dispatch_action_config": DISPATCH_CONFIG,
    "focus_on_load": FOCUS,
    "placeholder": PLACEHOLDER,
}

ELEMENTS: dict[str, Shape] = {
    "button": Shape(
        {
            "text": Text(max=75, kinds=PLAIN),
            "action_id": ACTION_ID,
            "url": URL,
            "value": Str(max=2000),
            "style": Enum(_kinds("primary", "danger")),
            "confirm": CONFIRM,
            "accessibility_label": Str(max=75),
        },
        required=_req("text"),
    ),
    "checkboxes": Shape(
        {
            "action_id": ACTION_ID,
            "options": ListOf(OPTION_ANY_TEXT, max=10),
            "initial_options": ListOf(OPTION_ANY_TEXT, max=10),
            "confirm": CONFIRM,
            "focus_on_load": FOCUS,
        },
        required=_req("options"),
    ),
    "radio_buttons": Shape(
        {
            "action_id": ACTION_ID,
            "options": ListOf(OPTION_ANY_TEXT, max=10),
            "initial_option": OPTION_ANY_TEXT,
            "confirm": CONFIRM,
            "focus_on_load": FOCUS,
        },
        required=_req("options"),
    ),
    "static_select": Shape(
        {
            **_SELECT_COMMON,
            "options": ListOf(OPTION, max=100),
            "option_groups": ListOf(Obj(shape="option_group"), max=100),
            "initial_option": OPTION,
        },
        one_of=(("options", "option_groups"),),
    ),
    "multi_static_select": Shape(
        {
            **_SELECT_COMMON,
            **_MULTI,
            "options": ListOf(OPTION, max=100),
            "option_groups": ListOf(Obj(shape="option_group"), max=100),
            "initial_options": ListOf(OPTION, max=100),
        },
        one_of=(("options", "option_groups"),),
    ),
    "external_select": Shape(
        {**_SELECT_COMMON, "initial_option": OPTION, "min_query_length": Int(min=0)}
    ),
    "multi_external_select": Shape(
        {
            **_SELECT_COMMON,
            **_MULTI,
            "initial_options": ListOf(OPTION, max=100),
            "min_query_length": Int(min=0),
        }
    ),
    "users_select": Shape({**_SELECT_COMMON, "initial_user": USER_ID}),
    "multi_users_select": Shape(
        {**_SELECT_COMMON, **_MULTI, "initial_users": ListOf(USER_ID, max=100)}
    ),
    "conversations_select": Shape(
        {
            **_SELECT_COMMON,
            "initial_conversation": USER_ID,
            "default_to_current_conversation": Bool(),
            "response_url_enabled": Bool(),
            "filter": Obj(shape="filter"),
        }
    ),
    "multi_conversations_select": Shape(
        {
            **_SELECT_COMMON,
            **_MULTI,
            "initial_conversations": ListOf(USER_ID, max=100),
            "default_to_current_conversation": Bool(),
            "filter": Obj(shape="filter"),
        }
    ),
    "channels_select": Shape(
        {**_SELECT_COMMON, "initial_channel": USER_ID, "response_url_enabled": Bool()}
    ),
    "multi_channels_select": Shape(
        {**_SELECT_COMMON, **_MULTI, "initial_channels": ListOf(USER_ID, max=100)}
    ),
    "overflow": Shape(
        {
            "action_id": ACTION_ID,
            "options": ListOf(Obj(shape="overflow_option"), max=5),
            "confirm": CONFIRM,
        },
        required=_req("options"),
    ),
    "datepicker": Shape({**_SELECT_COMMON, "initial_date": Str(max=10, min=10)}),
    "timepicker": Shape(
        {**_SELECT_COMMON, "initial_time": Str(max=5, min=5), "timezone": Str(max=255)}
    ),
    "datetimepicker": Shape(
        {
            "action_id": ACTION_ID,
            "initial_date_time": Int(min=0),
            "confirm": CONFIRM,
            "focus_on_load": FOCUS,
        }
    ),
    "plain_text_input": Shape(
        {
            **_TEXT_INPUT_COMMON,
            "initial_value": Str(max=3000, min=0),
            "multiline": Bool(),
            "min_length": Int(min=0, max=3000),
            "max_length": Int(min=1, max=3000),
        }
    ),
    "email_text_input": Shape({**_TEXT_INPUT_COMMON, "initial_value": Str(max=3000, min=0)}),
    "url_text_input": Shape({**_TEXT_INPUT_COMMON, "initial_value": Str(max=3000, min=0)}),
    "number_input": Shape(
        {
            **_TEXT_INPUT_COMMON,
            "is_decimal_allowed": Bool(),
            "initial_value": Str(max=255),
            "min_value": Str(max=255),
            "max_value": Str(max=255),
        },
        required=_req("is_decimal_allowed"),
    ),
    "rich_text_input": Shape({**_TEXT_INPUT_COMMON, "initial_value": Loose(dict)}),
    "file_input": Shape(
        {
            "action_id": ACTION_ID,
            "filetypes": ListOf(Str(max=255), max=100),
            "max_files": Int(min=1, max=10),
        }
    ),
    "image": Shape(
        {"image_url": URL, "slack_file": Loose(dict), "alt_text": Str(max=2000)},
        required=_req("alt_text"),
        one_of=(("image_url", "slack_file"),),
    ),
}
"""Block elements by ``type``: interactive elements and the image element."""

_SELECTS = _kinds(
    "static_select",
    "multi_static_select",
    "external_select",
    "multi_external_select",
    "users_select",
    "multi_users_select",
    "conversations_select",
    "multi_conversations_select",
    "channels_select",
    "multi_channels_select",
)
ACTIONS_ELEMENTS = _SELECTS | _kinds(
    "button",
    "checkboxes",
    "radio_buttons",
    "overflow",
    "datepicker",
    "timepicker",
    "datetimepicker",
)
"""What an ``actions`` block may hold (text inputs may not: ``invalid_blocks``)."""
SECTION_ACCESSORIES = _SELECTS | _kinds(
    "button", "checkboxes", "radio_buttons", "overflow", "datepicker", "timepicker", "image"
)
"""What a section's ``accessory`` may be."""
INPUT_ELEMENTS = _SELECTS | _kinds(
    "checkboxes",
    "radio_buttons",
    "datepicker",
    "timepicker",
    "datetimepicker",
    "plain_text_input",
    "email_text_input",
    "url_text_input",
    "number_input",
    "rich_text_input",
    "file_input",
)
"""What an ``input`` block's ``element`` may be."""

BLOCKS: dict[str, Shape] = {
    "section": Shape(
        {
            "text": Text(max=3000),
            "fields": ListOf(Text(max=2000), max=10),
            "accessory": Obj(kinds=SECTION_ACCESSORIES),
            "expand": Bool(),
        },
        one_of=(("text", "fields"),),
    ),
    "actions": Shape(
        {"elements": ListOf(Obj(kinds=ACTIONS_ELEMENTS), max=25)}, required=_req("elements")
    ),
    # Context text objects share the 3,000 limit of every text object (the reference gives
    # no other figure); at most 10 elements.
    "context": Shape(
        {"elements": ListOf(Obj(kinds=_kinds("image", "plain_text", "mrkdwn")), max=10)},
        required=_req("elements"),
    ),
    "header": Shape({"text": Text(max=150, kinds=PLAIN)}, required=_req("text")),
    "divider": Shape({}),
    "image": Shape(
        {
            "image_url": URL,
            "slack_file": Loose(dict),
            "alt_text": Str(max=2000),
            "title": Text(max=2000, kinds=PLAIN),
        },
        required=_req("alt_text"),
        one_of=(("image_url", "slack_file"),),
    ),
    "input": Shape(
        {
            "label": Text(max=2000, kinds=PLAIN),
            "element": Obj(kinds=INPUT_ELEMENTS),
            "dispatch_action": Bool(),
            "hint": Text(max=2000, kinds=PLAIN),
            "optional": Bool(),
        },
        required=_req("label", "element"),
    ),
    # The 12,000 limit is across all markdown blocks of a message (checked per message too).
    "markdown": Shape({"text": Str(max=12_000)}, required=_req("text")),
    # Rich text's nested sections, lists and styled runs are not checked in depth.
    "rich_text": Shape({"elements": ListOf(Loose(dict), max=100)}, required=_req("elements")),
    "video": Shape(
        {
            "alt_text": Str(max=2000),
            "author_name": Str(max=50),
            "description": Text(max=200, kinds=PLAIN),
            "provider_icon_url": URL,
            "provider_name": Str(max=255),
            "title": Text(max=200, kinds=PLAIN),
            "title_url": URL,
            "thumbnail_url": URL,
            "video_url": URL,
        },
        required=_req("alt_text", "title", "thumbnail_url", "video_url"),
    ),
    "file": Shape(
        {"external_id": Str(max=255), "source": Enum(_kinds("remote"))},
        required=_req("external_id", "source"),
    ),
}
"""Layout blocks by ``type``; each may also carry a ``block_id`` of 1..255 characters."""

COMPOSITIONS: dict[str, Shape] = {
    "option": Shape(
        {
            "text": Text(max=75, kinds=PLAIN),
            "value": Str(max=150),
            "description": Text(max=75, kinds=PLAIN),
        },
        required=_req("text", "value"),
    ),
    # Checkboxes and radio buttons accept mrkdwn in their options' text and description.
    "option_mrkdwn": Shape(
        {"text": Text(max=75), "value": Str(max=150), "description": Text(max=75)},
        required=_req("text", "value"),
    ),
    "overflow_option": Shape(
        {
            "text": Text(max=75, kinds=PLAIN),
            "value": Str(max=150),
            "description": Text(max=75, kinds=PLAIN),
            "url": URL,
        },
        required=_req("text", "value"),
    ),
    "option_group": Shape(
        {"label": Text(max=75, kinds=PLAIN), "options": ListOf(OPTION, max=100)},
        required=_req("label", "options"),
    ),
    "confirm": Shape(
        {
            "title": Text(max=100, kinds=PLAIN),
            "text": Text(max=300),
            "confirm": Text(max=30, kinds=PLAIN),
            "deny": Text(max=30, kinds=PLAIN),
            "style": Enum(_kinds("primary", "danger")),
        },
        required=_req("title", "text", "confirm", "deny"),
    ),
    "dispatch_action_config": Shape(
        {
            "trigger_actions_on": ListOf(
                Enum(_kinds("on_enter_pressed", "on_character_entered")), max=2
            )
        }
    ),
    "filter": Shape(
        {
            "include": ListOf(Enum(_kinds("im", "mpim", "private", "public")), max=4),
            "exclude_external_shared_channels": Bool(),
            "exclude_bot_users": Bool(),
        }
    ),
}
"""Composition objects without a ``type`` of their own, by name."""

TEXT_FIELDS: dict[str, Shape] = {
    "plain_text": Shape({"text": Str(max=3000), "emoji": Bool()}, required=_req("text")),
    "mrkdwn": Shape({"text": Str(max=3000), "verbatim": Bool()}, required=_req("text")),
}
"""Text objects' own fields; the enclosing rule (``Text``) may lower ``text``'s maximum."""
