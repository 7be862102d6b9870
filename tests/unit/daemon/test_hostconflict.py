"""Host problems recognised in nvidia-imex's output, with messages that say what to do."""

from __future__ import annotations

from computedomain.daemon import hostconflict
from computedomain.daemon.hostconflict import Reason

CONTEXT = hostconflict.Context("n3", "10.0.0.3", "/etc/hosts", "/imexd/nodes.cfg")


def test_the_host_session_holder_is_named_with_the_fix() -> None:
    finding = hostconflict.detect("[ERROR] Failed to allocate Imex session ... NV_ERR_IN_USE\n")
    assert finding is not None
    assert finding.reason is Reason.SESSION_IN_USE
    assert hostconflict.message(finding, CONTEXT) == (
        "nvidia-imex cannot start: the IMEX session is held by a host nvidia-imex.service "
        "(NV_ERR_IN_USE); stop and disable it on node n3: systemctl disable --now nvidia-imex"
    )


def test_no_matching_interface_names_the_files_and_the_ip() -> None:
    finding = hostconflict.detect(
        "No matching network interface found for any IP addresses in the node configuration file"
    )
    assert finding is not None
    assert finding.reason is Reason.NO_INTERFACE
    text = hostconflict.message(finding, CONTEXT)
    assert "10.0.0.3" in text
    assert "/etc/hosts" in text
    assert "/imexd/nodes.cfg" in text


def test_ordinary_output_is_no_finding() -> None:
    assert hostconflict.detect("Identified this node as ID 0\n") is None
