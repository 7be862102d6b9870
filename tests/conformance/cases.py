"""The shape of a conformance case: a named interaction with one client (kubectl, helm, the
official Python client, our client-go program), its steps, and what the embedded API server is
known to do about it.

A case's steps run in order in the case's own namespace (``{ns}`` in any argument is replaced
by it); each step's result is normalised (:mod:`.normalise`) and compared with the result
kube-apiserver gave, which ``make conformance-record`` keeps in ``golden.json``. A ``setup``
step is run but only its success is compared: it prepares what the interaction acts on. A case
is ``identical`` unless it names the fix that made it so (``fixed``) or the refusal the
embedded server gives instead (``refused``): then the steps before the refusal's step must
still match, and that step must fail as the refusal says.
"""

from __future__ import annotations

from typing import Any

import attrs


@attrs.frozen
class Cli:
    """A kubectl or helm command line (``program``), with standard input."""

    program: str
    args: tuple[str, ...]
    stdin: str | None = None
    setup: bool = False


@attrs.frozen
class Call:
    """A method of one of the Python client's typed API classes (``CoreV1Api`` ...), called
    ``_with_http_info`` so the HTTP status is compared too."""

    api: str
    method: str
    kwargs: dict[str, Any] = attrs.field(factory=dict)
    setup: bool = False


@attrs.frozen
class Dynamic:
    """A verb of the Python client's dynamic client on the resource of ``api_version``/``kind``."""

    api_version: str
    kind: str
    verb: str
    kwargs: dict[str, Any] = attrs.field(factory=dict)
    setup: bool = False


@attrs.frozen
class Watch:
    """A watch with the Python client: the list's resourceVersion is taken first, then
    ``then`` runs, then the first ``events`` events after that version are read (type and
    object)."""

    api: str
    method: str
    kwargs: dict[str, Any]
    then: tuple[Call, ...]
    events: int
    setup: bool = False


@attrs.frozen
class GoClient:
    """A scenario of the corpus's client-go program (``cd-conformance-client``, built from
    ``sim/controlplane/conformance``): its JSON transcript of operations, each with its HTTP
    status, the media type of the body it sent and the objects returned or the error."""

    scenario: str
    setup: bool = False


Step = Cli | Call | Dynamic | Watch | GoClient


@attrs.frozen
class Refusal:
    """What the embedded server answers instead of kube-apiserver's result: at step ``step``
    (0-based), the HTTP status (Python client) or exit code (kubectl, helm), and text the
    message contains; ``why`` is the table's explanation."""

    step: int
    code: int
    message: str
    why: str


@attrs.frozen
class Case:
    """One interaction of the corpus."""

    name: str
    client: str  # kubectl, helm, python, client-go
    category: str  # the category: create, apply, patch, ...
    steps: tuple[Step, ...]
    generated: tuple[str, ...] = ()  # generateName prefixes whose suffix is normalised away
    drop: tuple[
        tuple[str, ...], ...
    ] = ()  # key paths left out of compared objects (why: in the case)
    fixed: str | None = None  # the difference found and fixed in the embedded server
    refused: Refusal | None = None

    @property
    def namespace(self) -> str:
        return f"cf-{self.name}"[:63].rstrip("-")

    @property
    def status(self) -> str:
        if self.refused is not None:
            return "refused"
        return "fixed" if self.fixed else "identical"


def kubectl(*args: str, stdin: str | None = None, setup: bool = False) -> Cli:
    return Cli("kubectl", args, stdin, setup)


def helm(*args: str, setup: bool = False) -> Cli:
    return Cli("helm", args, None, setup)
