"""Reading ResourceClaims for prepare and cleanup, with API errors classified.

Prepare reads each claim of a request (the kubelet sends only namespace, name and UID) as the
kubelet helper does: a claim that does not exist is a permanent error
for that claim; any other API failure is retryable within the request's budget. Cleanup only
needs to know whether the claim still exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from computedomain.api.errors import PermanentError, TemporaryError
from computedomain.kube import errors, resources
from computedomain.kube.rest import Api
from computedomain.proto import dra


class ClaimReader:
    def __init__(self, api: Api) -> None:
        self.api = api

    async def fetch(self, ref: dra.ClaimRef) -> Mapping[str, Any]:
        """The claim; PermanentError when it does not exist, TemporaryError on API trouble."""
        try:
            return await self.api.get(resources.RESOURCE_CLAIMS, ref.name, ref.namespace)
        except errors.NotFound as exc:
            raise PermanentError(f"ResourceClaim {ref.namespace}/{ref.name} not found") from exc
        except errors.ApiError as exc:
            raise TemporaryError(
                f"reading ResourceClaim {ref.namespace}/{ref.name}: {exc}"
            ) from exc

    async def lookup(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The claim, or None when it does not exist; raises ApiError otherwise."""
        try:
            return await self.api.get(resources.RESOURCE_CLAIMS, name, namespace)
        except errors.NotFound:
            return None
