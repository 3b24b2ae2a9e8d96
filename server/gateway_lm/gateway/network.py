"""VS Code's network settings → how the client reaches the gateway (rfcs/0007-network-and-options.md).

The client only ever talks to one host, the base URL's, so whether a proxy is used is decided once,
when the client is built (and again whenever a setting changes), not per request.
"""

from __future__ import annotations

import ipaddress
import logging
import ssl
import sys
from dataclasses import dataclass
from urllib.parse import urlsplit
from urllib.request import getproxies

import certifi
import httpx

from ..settings import Settings

log = logging.getLogger(__name__)
# Where OpenSSL's store is not what the OS trusts, and the OS verifies (truststore): macOS (the
# Keychain; OpenSSL reads /etc/ssl/cert.pem) and Windows (its certificate store and its policies).
OS_VERIFIES = frozenset({"darwin", "win32"})


@dataclass(frozen=True)
class Route:
    """How requests leave: `proxy` set means through it (httpx's own transport); None means
    direct (the aiohttp transport), or through the environment's proxies when `use_env`."""

    proxy: httpx.Proxy | None
    use_env: bool
    verify: ssl.SSLContext | bool  # for connections through a proxy
    direct_verify: ssl.SSLContext  # for direct connections, which always verify

    @property
    def proxied(self) -> bool:
        """Whether requests go through a proxy: `http.proxy`, or one from the environment."""
        return self.proxy is not None or (self.use_env and bool(getproxies()))


def route(settings: Settings, platform: str = sys.platform) -> Route:
    context = ssl_context(settings, platform)
    bypassed = bypasses_proxy(settings.noProxy, settings.baseUrl)
    # `http.proxyStrictSSL` exists for proxies that re-sign TLS: it applies through a proxy only.
    proxied_verify: ssl.SSLContext | bool = context if settings.proxyStrictSSL else False
    if settings.proxy and not bypassed:
        proxy = _proxy(settings.proxy, settings.proxyAuthorization)
        return Route(proxy, use_env=False, verify=proxied_verify, direct_verify=context)
    # VS Code's own proxy setting replaces the environment's; `http.noProxy` applies to both.
    return Route(None, use_env=not settings.proxy and not bypassed, verify=proxied_verify, direct_verify=context)


def _proxy(url: str, authorization: str | None) -> httpx.Proxy:
    return httpx.Proxy(url, headers={"proxy-authorization": authorization} if authorization else None)


def ssl_context(settings: Settings, platform: str = sys.platform) -> ssl.SSLContext:
    """With `http.systemCertificates`, what the OS trusts, as VS Code does: on macOS and Windows the OS
    verifies each server (`truststore.SSLContext`: the Keychain, Windows' certificate store); on
    Linux the OS store as OpenSSL finds it (ssl.create_default_context), or certifi's roots (what
    httpx trusts by default) where that store is empty. Without it, certifi's alone. Not both:
    parsing a second full root store slows every sidecar start (rfcs/0005, "Measured costs"). Then
    the user's CA bundle, which truststore hands the OS as extra roots; an unreadable bundle is
    reported and skipped, never fatal."""
    if not settings.systemCertificates:
        context = ssl.create_default_context(cafile=certifi.where())
    elif platform in OS_VERIFIES and (verifier := _os_verifier()) is not None:
        context = verifier
    else:
        context = ssl.create_default_context()
        if not context.cert_store_stats()["x509_ca"]:  # e.g. a python.org build on macOS
            context.load_verify_locations(cafile=certifi.where())
    if settings.caBundle:
        try:
            context.load_verify_locations(cafile=settings.caBundle)
        except (OSError, ssl.SSLError, ValueError) as error:
            log.error(
                "vercelAiGateway.caBundle: %s cannot be used (%s); using the other certificates",
                settings.caBundle,
                error,
            )
    return context


def _os_verifier() -> ssl.SSLContext | None:
    try:
        import truststore  # imported where it is used: on Linux it is not
    except ImportError as error:  # an interpreter without the peer-chain API it needs (truststore.__init__)
        log.warning("the OS's certificate store cannot be used (%s); using OpenSSL's", error)
        return None
    return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the chain and the host name


def bypasses_proxy(no_proxy: list[str], url: str) -> bool:
    """Whether `url`'s host is in `http.noProxy`: a host (`example.com`, which also covers its
    subdomains, as in VS Code), `.example.com` or `*.example.com`, `*`, an IP address or network
    (`10.0.0.0/8`), each optionally with `:port`."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return any(_matches(entry.strip().lower(), host, port) for entry in no_proxy if entry.strip())


def _matches(entry: str, host: str, port: int) -> bool:
    if entry == "*":
        return True
    pattern, _, entry_port = entry.rpartition(":") if _has_port(entry) else (entry, "", "")
    if entry_port and entry_port != str(port):
        return False
    pattern = pattern.strip("[]")
    network = _network(pattern)
    if network is not None:
        address = _address(host)
        return address is not None and address in network
    pattern = pattern.removeprefix("*").removeprefix(".")
    return host == pattern or host.endswith("." + pattern)


def _has_port(entry: str) -> bool:
    head, sep, tail = entry.rpartition(":")
    return bool(sep) and tail.isdigit() and (not head.count(":") or head.endswith("]"))


def _network(pattern: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(pattern, strict=False)
    except ValueError:
        return None


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
