"""apimachinery's name, label and qualified-name checks (util/validation), returning its exact messages."""

from __future__ import annotations

import re

QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME_ERR = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
LABEL_VALUE_FMT = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
LABEL_VALUE_ERR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL_ERR = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character"
)
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1123_SUBDOMAIN_ERR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)
CONFIG_MAP_KEY_FMT = "[-._a-zA-Z0-9]+"
CONFIG_MAP_KEY_ERR = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"

_QUALIFIED = re.compile(f"^{QUALIFIED_NAME_FMT}$")
_LABEL_VALUE = re.compile(f"^{LABEL_VALUE_FMT}$")
_DNS_LABEL = re.compile(f"^{DNS1123_LABEL_FMT}$")
_DNS_SUBDOMAIN = re.compile(f"^{DNS1123_SUBDOMAIN_FMT}$")
_CONFIG_KEY = re.compile(f"^{CONFIG_MAP_KEY_FMT}$")


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """validation.RegexError (note the double spaces apimachinery produces between examples)."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    text = msg + " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            text += " or "
        text += f"'{example}', "
    return text + f"regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def empty_error() -> str:
    return "must be non-empty"


def is_dns1123_label(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not _DNS_LABEL.match(value):
        if _DNS_SUBDOMAIN.match(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > 253:
        errs.append(max_len_error(253))
    if not _DNS_SUBDOMAIN.match(value):
        errs.append(regex_error(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """Label keys, annotation keys, finalizers: `[prefix/]name`."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + empty_error())
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part " + empty_error())
    elif len(name) > 63:
        errs.append("name part " + max_len_error(63))
    if name and not _QUALIFIED.match(name):
        errs.append("name part " + regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_valid_label_value(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not _LABEL_VALUE.match(value):
        errs.append(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def is_config_map_key(value: str) -> list[str]:
    """ConfigMap and Secret data keys."""
    errs: list[str] = []
    if len(value) > 253:
        errs.append(max_len_error(253))
    if not _CONFIG_KEY.match(value):
        errs.append(regex_error(CONFIG_MAP_KEY_ERR, CONFIG_MAP_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    if value == ".":
        errs.append("must not be '.'")
    elif value == "..":
        errs.append("must not be '..'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def is_valid_port_num(port: int) -> list[str]:
    if 1 <= port <= 65535:
        return []
    return ["must be between 1 and 65535, inclusive"]


def is_valid_port_name(name: str) -> list[str]:
    """IANA_SVC_NAME rules for named ports."""
    errs: list[str] = []
    if len(name) > 15:
        errs.append(max_len_error(15))
    if not re.match(r"^[-a-z0-9]+$", name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search(r"[a-z]", name):
        errs.append("must contain at least one letter (a-z)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
DNS1035_LABEL_ERR = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character"
)
_DNS1035 = re.compile(f"^{DNS1035_LABEL_FMT}$")
ENV_VAR_NAME_FMT = "[-._a-zA-Z][-._a-zA-Z0-9]*"
ENV_VAR_NAME_ERR = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or "
    "'.', and must not start with a digit"
)
_ENV_VAR = re.compile(f"^{ENV_VAR_NAME_FMT}$")


def is_dns1035_label(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not _DNS1035.match(value):
        errs.append(regex_error(DNS1035_LABEL_ERR, DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_env_var_name(value: str) -> list[str]:
    errs: list[str] = []
    if not _ENV_VAR.match(value):
        errs.append(regex_error(ENV_VAR_NAME_ERR, ENV_VAR_NAME_FMT, "my.env-name", "MY_ENV.NAME", "MyEnvName1"))
    if value == ".":
        errs.append("must not be '.'")
    elif value == "..":
        errs.append("must not be '..'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs
