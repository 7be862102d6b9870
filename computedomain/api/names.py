"""Every name in the compatibility contract, in one place.

These strings are what makes our components interchangeable with upstream's: objects we write
must be readable by upstream's components and the other way round, so nothing here may change.
docs/compatibility.md writes the contract out; its sections name the values defined here. Pure
data and pure functions only.
"""

from __future__ import annotations

import hashlib
from typing import Final

# --- API group, versions, kinds ----------------------------------------------------------------

API_GROUP: Final = "resource.nvidia.com"
API_VERSION: Final = "v1beta1"
GROUP_VERSION: Final = f"{API_GROUP}/{API_VERSION}"

COMPUTE_DOMAIN_KIND: Final = "ComputeDomain"
COMPUTE_DOMAIN_LIST_KIND: Final = "ComputeDomainList"
COMPUTE_DOMAIN_PLURAL: Final = "computedomains"
COMPUTE_DOMAIN_SINGULAR: Final = "computedomain"

CLIQUE_KIND: Final = "ComputeDomainClique"
CLIQUE_LIST_KIND: Final = "ComputeDomainCliqueList"
CLIQUE_PLURAL: Final = "computedomaincliques"
CLIQUE_SINGULAR: Final = "computedomainclique"

CHANNEL_CONFIG_KIND: Final = "ComputeDomainChannelConfig"
DAEMON_CONFIG_KIND: Final = "ComputeDomainDaemonConfig"

# --- DRA driver, device classes, devices, requests ---------------------------------------------

DRIVER_NAME: Final = "compute-domain.nvidia.com"
DAEMON_DEVICE_CLASS: Final = "compute-domain-daemon.nvidia.com"
CHANNEL_DEVICE_CLASS: Final = "compute-domain-default-channel.nvidia.com"
# Defined upstream but shipped by nobody; kept so the name is never reused for something else.
UNUSED_CHANNEL_DEVICE_CLASS: Final = "compute-domain-channel.nvidia.com"

CHANNEL_REQUEST: Final = "channel"
DAEMON_REQUEST: Final = "daemon"

DEVICE_TYPE_CHANNEL: Final = "channel"
DEVICE_TYPE_DAEMON: Final = "daemon"
ATTRIBUTE_TYPE: Final = "type"
ATTRIBUTE_ID: Final = "id"
# Additive attribute (ours): the node's clique, so claims can select by rack.
ATTRIBUTE_CLIQUE_ID: Final = "cliqueID"

# Upstream's DeviceClass CEL selectors (docs/compatibility.md#devices-and-resourceslices).
DAEMON_DEVICE_CLASS_SELECTOR: Final = (
    "device.driver == 'compute-domain.nvidia.com' && "
    "device.attributes['compute-domain.nvidia.com'].type == 'daemon'"
)
CHANNEL_DEVICE_CLASS_SELECTOR: Final = (
    "device.driver == 'compute-domain.nvidia.com' && "
    "device.attributes['compute-domain.nvidia.com'].type == 'channel' && "
    "device.attributes['compute-domain.nvidia.com'].id == 0"
)


def channel_device_name(channel_id: int) -> str:
    """``channel-<id>``: the published device name of an IMEX channel."""
    return f"channel-{channel_id}"


def daemon_device_name(daemon_id: int) -> str:
    """``daemon-<id>``: the published device name of the per-node daemon slot."""
    return f"daemon-{daemon_id}"


# --- Labels, finalizers, annotations -----------------------------------------------------------

COMPUTE_DOMAIN_LABEL: Final = "resource.nvidia.com/computeDomain"  # value: CD UID
FINALIZER: Final = COMPUTE_DOMAIN_LABEL  # the same string serves as finalizer
CLIQUE_LABEL: Final = "resource.nvidia.com/computeDomain.cliqueID"
# Ours (additive): on a daemon pod, ``<Reason>: <message>`` while a host problem keeps its
# nvidia-imex from running (e.g. a host nvidia-imex.service holding the session); the
# controller quotes it in the ComputeDomain's Ready condition
# (docs/compatibility.md#say-why-a-workload-waits).
DAEMON_PROBLEM_ANNOTATION: Final = "resource.nvidia.com/computeDomain.daemonProblem"
# Ours (additive), with host-managed IMEX only: on a ComputeDomain, one annotation per node
# whose host nvidia-imex is not ready while a channel claim of the domain waits for it; the value
# says why (``<node>: <message>``). The node's kubelet plugin sets and clears it; the controller
# quotes it in the Ready condition (docs/compatibility.md#host-managed-imex-daemons).
HOST_IMEX_PROBLEM_PREFIX: Final = "host-imex.resource.nvidia.com/"
_ANNOTATION_NAME_MAX: Final = 63
TARGET_LABEL: Final = "resource.nvidia.com/computeDomainTarget"
TARGET_DAEMON: Final = "Daemon"
TARGET_WORKLOAD: Final = "Workload"

# --- Objects the controller renders --------------------------------------------------------------

DAEMON_OBJECT_PREFIX: Final = "computedomain-daemon-"
DAEMON_SERVICE_ACCOUNT: Final = "compute-domain-daemon-service-account"
DAEMON_CONTAINER: Final = "compute-domain-daemon"
DAEMON_POD_CLAIM: Final = "compute-domain-daemon"  # pod-level resourceClaims[].name
DEFAULT_MAX_NODES_PER_IMEX_DOMAIN: Final = 18


def daemon_object_name(cd_uid: str) -> str:
    """Name of the per-domain DaemonSet and daemon ResourceClaimTemplate (driver namespace)."""
    return f"{DAEMON_OBJECT_PREFIX}{cd_uid}"


def clique_object_name(cd_uid: str, clique_id: str) -> str:
    """Name of the ComputeDomainClique of one domain and one NVLink clique."""
    return f"{cd_uid}.{clique_id}"


# --- CDI ---------------------------------------------------------------------------------------

CDI_VENDOR: Final = "k8s.compute-domain.nvidia.com"
CDI_CLASS_DEVICE: Final = "device"
CDI_CLASS_CLAIM: Final = "claim"
CDI_BASE_DEVICE: Final = "all"  # k8s.compute-domain.nvidia.com/device=all
CDI_DEFAULT_ROOT: Final = "/var/run/cdi"
IMEX_CHANNEL_DIR: Final = "/dev/nvidia-caps-imex-channels"
IMEX_CHANNEL_DEVICE_PREFIX: Final = "channel"
IMEX_CHANNELS_PROC_NAME: Final = "nvidia-caps-imex-channels"  # /proc/devices entry
IMEX_CHANNEL_COUNT: Final = 2048
FABRIC_IMEX_MGMT_PATH: Final = "/proc/driver/nvidia/capabilities/fabric-imex-mgmt"


def cdi_kind(cdi_class: str) -> str:
    """``<vendor>/<class>``, the ``kind`` of a CDI spec."""
    return f"{CDI_VENDOR}/{cdi_class}"


def cdi_claim_device_name(claim_uid: str, device: str) -> str:
    """Device name inside a per-claim CDI spec: ``<claimUID>-<device>``."""
    return f"{claim_uid}-{device}"


def cdi_qualified_name(cdi_class: str, device: str) -> str:
    """Fully-qualified CDI device id: ``<vendor>/<class>=<name>``."""
    return f"{cdi_kind(cdi_class)}={device}"


def cdi_claim_spec_file(claim_uid: str) -> str:
    """File name of the per-claim CDI spec under the CDI root."""
    return f"{CDI_VENDOR}-{CDI_CLASS_CLAIM}_{claim_uid}.yaml"


CDI_BASE_SPEC_FILE: Final = f"{CDI_VENDOR}-{CDI_CLASS_DEVICE}_base.yaml"


def imex_channel_path(channel_id: int) -> str:
    """Container path of an IMEX channel device node."""
    return f"{IMEX_CHANNEL_DIR}/{IMEX_CHANNEL_DEVICE_PREFIX}{channel_id}"


# --- Kubelet plugin paths (production defaults; every one is overridable) ------------------------

KUBELET_REGISTRAR_DIR: Final = "/var/lib/kubelet/plugins_registry"
KUBELET_PLUGINS_DIR: Final = "/var/lib/kubelet/plugins"
PLUGIN_DIR: Final = f"{KUBELET_PLUGINS_DIR}/{DRIVER_NAME}"
REGISTRATION_SOCKET: Final = f"{DRIVER_NAME}-reg.sock"
DRA_SOCKET: Final = "dra.sock"
PREPARE_LOCK_FILE: Final = "pu.lock"
CHECKPOINT_FILE: Final = "checkpoint.json"
DOMAINS_SUBDIR: Final = "domains"
DEFAULT_BOOT_ID_PATH: Final = "/proc/sys/kernel/random/boot_id"
DEFAULT_PROC_DEVICES_PATH: Final = "/proc/devices"
DRA_SERVICES: Final = ("v1.DRAPlugin", "v1beta1.DRAPlugin")
REGISTRATION_PLUGIN_TYPE: Final = "DRAPlugin"

# --- Daemon ------------------------------------------------------------------------------------

IMEXD_DIR: Final = "/imexd"
IMEXD_CONFIG: Final = "imexd.cfg"
IMEXD_CONFIG_TEMPLATE: Final = "imexd.cfg.tmpl"
IMEXD_NODES_CONFIG: Final = "nodes.cfg"
HOSTS_FILE: Final = "/etc/hosts"
DNS_NAME_PREFIX: Final = "compute-domain-daemon-"
DNS_NAME_FORMAT: Final = DNS_NAME_PREFIX + "{:04d}"
HOSTS_HEADER: Final = "# Compute Domain Daemon mappings"
# Where the hosts file points the name of a slot no live daemon of the clique holds: a local
# address nothing listens on, so nvidia-imex fails fast instead of asking cluster DNS.
HOSTS_SENTINEL_IP: Final = "127.0.0.2"
IMEX_SERVER_PORT: Final = 50000
IMEX_CMD_PORT: Final = 50005
IMEX_BINARY: Final = "nvidia-imex"
IMEX_CTL_BINARY: Final = "nvidia-imex-ctl"

# The built-in policies a daemon selects when its flags name none (the registry registers them
# under these names; kept here so that reading the daemon's settings does not load the registry).
DEFAULT_INDEX_POLICY: Final = "lowest-free"
DEFAULT_DNS_NAME_POLICY: Final = "upstream"
TEMPLATE_NODES_CONFIG_PLACEHOLDER: Final = "{{ .IMEXDaemonNodesConfigPath }}"
TEMPLATE_CMD_BIND_IP_PLACEHOLDER: Final = "{{ .IMEXCmdBindInterfaceIP }}"


def dns_name(index: int) -> str:
    """Upstream's DNS name of a daemon index: ``compute-domain-daemon-%04d``."""
    return DNS_NAME_FORMAT.format(index)


# Environment of the daemon container (rendered by the controller, injected by CDI).
ENV_CLIQUE_ID: Final = "CLIQUE_ID"
ENV_COMPUTE_DOMAIN_UUID: Final = "COMPUTE_DOMAIN_UUID"
ENV_COMPUTE_DOMAIN_NAME: Final = "COMPUTE_DOMAIN_NAME"
ENV_COMPUTE_DOMAIN_NAMESPACE: Final = "COMPUTE_DOMAIN_NAMESPACE"
ENV_NODE_NAME: Final = "NODE_NAME"
ENV_POD_IP: Final = "POD_IP"
ENV_POD_UID: Final = "POD_UID"
ENV_POD_NAME: Final = "POD_NAME"
ENV_POD_NAMESPACE: Final = "POD_NAMESPACE"
ENV_MAX_NODES_PER_IMEX_DOMAIN: Final = "MAX_NODES_PER_IMEX_DOMAIN"
ENV_FEATURE_GATES: Final = "FEATURE_GATES"
ENV_LOG_VERBOSITY: Final = "LOG_VERBOSITY"
ENV_NVIDIA_VISIBLE_DEVICES: Final = "NVIDIA_VISIBLE_DEVICES"


def host_imex_problem_annotation(node: str) -> str:
    """The annotation key of ``node``'s host IMEX problem on a ComputeDomain. Pure.

    A node name (a DNS subdomain) is a valid annotation name up to 63 characters; a longer one
    is cut and made unique by a hash of the whole name (the value names the node in full).
    """
    if len(node) <= _ANNOTATION_NAME_MAX:
        return HOST_IMEX_PROBLEM_PREFIX + node
    digest = hashlib.sha256(node.encode()).hexdigest()[:12]
    head = node[: _ANNOTATION_NAME_MAX - len(digest) - 1].rstrip(".-")
    return f"{HOST_IMEX_PROBLEM_PREFIX}{head}-{digest}"
