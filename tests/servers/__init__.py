"""Real servers on 127.0.0.1 for the live path: a replaying provider, a local httpbin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from primer.settings import Settings

if TYPE_CHECKING:
    from tests.servers.provider import ReplayProvider
    from tests.servers.service import LocalHttpbin


def live_settings(provider: ReplayProvider, httpbin: LocalHttpbin, *, api_key: str, service_key: str) -> Settings:
    """Settings pointing a live run at the two loopback servers.

    A short service timeout: httpbin's /delay/10 is still a timeout, found in half a second.
    """
    return Settings(
        api_key=api_key,
        base_url=provider.base_url,
        model="deepseek-flash",
        service_url=httpbin.url,
        service_key=service_key,
        service_timeout=0.5,
    )
