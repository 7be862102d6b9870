"""Who a daemon is: the facts the DaemonSet and CDI hand it
(docs/compatibility.md#daemon-environment). Pure data."""

from __future__ import annotations

from typing import Any

import attrs


@attrs.frozen
class Identity:
    """Who this daemon is: the facts the DaemonSet and CDI give it."""

    node_name: str
    pod_ip: str
    pod_uid: str
    pod_name: str
    pod_namespace: str
    clique_id: str
    cd_uid: str
    cd_name: str = ""
    cd_namespace: str = "default"

    def owner_reference(self) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod", "name": self.pod_name, "uid": self.pod_uid}
