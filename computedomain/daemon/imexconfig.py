"""The ``nvidia-imex`` configuration file: rendering upstream's template, and reading it back.

``run`` calls :func:`write_config` once at start, before it registers: the kubelet plugin has
placed ``imexd.cfg.tmpl`` in the domain directory (mounted at ``IMEXD_DIR``); we substitute
upstream's two Go-template fields and write ``imexd.cfg`` beside it. The IMEX stand-ins and
``check`` read the result with :func:`parse`. Only the two fields are supported; any other
template action is refused with a clear error rather than passed to IMEX verbatim.

The template itself ships with the kubelet plugin (``computedomain/kubeletplugin/
imexd.cfg.tmpl``), which places it; the daemon only renders what it finds.
"""

from __future__ import annotations

import re
from pathlib import Path

from computedomain.api import names
from computedomain.api.errors import ConfigError
from computedomain.daemon import files

NODES_FIELD = "IMEXDaemonNodesConfigPath"
BIND_IP_FIELD = "IMEXCmdBindInterfaceIP"

# Go's text/template accepts "{{.X}}", "{{ .X }}" and trim markers "{{- .X -}}".
_ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")


def render(template: str, *, nodes_config_path: str, cmd_bind_ip: str) -> str:
    """Substitute the two fields in ``template``. Pure; raises ConfigError naming the file
    for any other template action."""
    values = {f".{NODES_FIELD}": nodes_config_path, f".{BIND_IP_FIELD}": cmd_bind_ip}

    def substitute(match: re.Match[str]) -> str:
        action = match.group(1)
        if action not in values:
            raise ConfigError(
                names.IMEXD_CONFIG_TEMPLATE,
                f"unsupported template action {match.group(0)!r} "
                f"(only {{{{ .{NODES_FIELD} }}}} and {{{{ .{BIND_IP_FIELD} }}}} are known)",
            )
        return values[action]

    return _ACTION.sub(substitute, template)


def parse(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines of an IMEX config (``#`` comments and blank lines skipped). Pure."""
    result: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        result[key.strip()] = value.strip()
    return result


def write_config(imexd_dir: Path, *, pod_ip: str) -> Path:
    """Render ``<dir>/imexd.cfg.tmpl`` into ``<dir>/imexd.cfg`` (mode 0644, atomic).

    Idempotent. Raises ConfigError when the template is missing or has unknown actions,
    OSError on I/O failure.
    """
    template_path = imexd_dir / names.IMEXD_CONFIG_TEMPLATE
    try:
        template = template_path.read_text()
    except FileNotFoundError:
        raise ConfigError(
            str(template_path),
            "IMEX config template not found (the kubelet plugin places it when it prepares "
            "the daemon claim; is IMEXD_DIR right?)",
        ) from None
    text = render(
        template,
        nodes_config_path=str(imexd_dir / names.IMEXD_NODES_CONFIG),
        cmd_bind_ip=pod_ip,
    )
    config_path = imexd_dir / names.IMEXD_CONFIG
    # Not fsynced (computedomain.daemon.files): rendered again at every start of the daemon.
    files.atomic_write(config_path, text.encode(), durable=False)
    return config_path
