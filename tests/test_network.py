"""VS Code's network settings, against real parts: a TLS fake gateway whose certificate comes from a
throwaway CA (trustme), and a real CONNECT proxy on loopback (tests/connect_proxy.py)."""

from __future__ import annotations

import socket
import ssl
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import trustme
import truststore
from pygls.exceptions import JsonRpcException

from conftest import text_of
from connect_proxy import ConnectProxy
from fake_gateway import FakeServer
from gateway_lm.gateway.client import GatewayClient
from gateway_lm.gateway.errors import GatewayError
from gateway_lm.gateway.network import bypasses_proxy, route, ssl_context
from gateway_lm.messages import ChatRequest
from gateway_lm.pipeline import stream_chat
from gateway_lm.settings import Settings, secrets_of, updated_settings
from sidecar_client import Sidecar

USER = [{"role": 1, "content": [{"type": "text", "value": "hi"}]}]
ANSWER = "Hello from the fake gateway."
AUTH = "Basic dXNlcjpzM2NyZXQtcHJveHktcGFzcw=="


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def ca_file(ca: trustme.CA, tmp_path: Path) -> str:
    path = tmp_path / "company-ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


def tls_server(ca: trustme.CA) -> FakeServer:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    return FakeServer(tls=context).start()


@pytest.fixture
def tls_gateway(ca: trustme.CA) -> Iterator[FakeServer]:
    server = tls_server(ca)
    yield server
    server.stop()


@pytest.fixture
def proxy() -> Iterator[ConnectProxy]:
    started = ConnectProxy().start()
    yield started
    started.stop()


def https_url(server: FakeServer) -> str:
    return f"https://127.0.0.1:{server.server_address[1]}/v1"


def target(server: FakeServer) -> str:
    return f"127.0.0.1:{server.server_address[1]}"


async def run(settings: Settings, platform: str = sys.platform) -> str:
    request = ChatRequest.model_validate({"model": "fake/text", "messages": USER})
    client = GatewayClient(settings, platform)
    try:
        parts = [p async for batch in stream_chat(request, settings, client, "test-key") for p in batch]
    finally:
        await client.aclose()
    return text_of(parts)


async def fails(settings: Settings, platform: str = sys.platform) -> GatewayError:
    with pytest.raises(GatewayError) as caught:
        await run(settings, platform)
    return caught.value


def stops_within(server: FakeServer, seconds: float) -> bool:
    stopping = threading.Thread(target=server.stop, daemon=True)  # left behind if it hangs
    stopping.start()
    stopping.join(seconds)
    return not stopping.is_alive()


async def test_a_client_that_never_sends_a_client_hello_holds_neither_requests_nor_teardown(
    ca: trustme.CA, ca_file: str
) -> None:
    """A `.ci/run` once hung here: the server did each TLS handshake in its accept loop, so a
    connection left open without a ClientHello stopped every later request, and the teardown's
    `shutdown()` waited on it for good."""
    server = tls_server(ca)
    stuck = socket.create_connection(server.server_address[:2])  # TCP only, then silence, left open
    try:
        started = time.monotonic()
        with anyio.fail_after(15):
            answer = await run(Settings(baseUrl=https_url(server), caBundle=ca_file, maxRetries=0))
        assert answer == ANSWER and time.monotonic() - started < 5
        assert stops_within(server, 5), "the teardown waited on the silent client"
    finally:
        stuck.close()
        stops_within(server, 5)


async def test_the_ca_bundle_setting_trusts_a_private_ca(tls_gateway: FakeServer, ca_file: str) -> None:
    error = await fails(Settings(baseUrl=https_url(tls_gateway), systemCertificates=False))
    assert error.kind == "network" and "vercelAiGateway.caBundle" in error.message
    assert "http.proxyStrictSSL" not in error.message  # no proxy: turning it off would change nothing
    assert len(tls_gateway.gateway.requests) == 0
    assert await run(Settings(baseUrl=https_url(tls_gateway), caBundle=ca_file)) == ANSWER


async def test_an_untrusted_certificate_is_not_retried(tls_gateway: FakeServer, proxy: ConnectProxy) -> None:
    settings = Settings(baseUrl=https_url(tls_gateway), proxy=proxy.url, maxRetries=3)
    error = await fails(settings)
    assert "vercelAiGateway.caBundle" in error.message and "http.proxyStrictSSL" in error.message
    assert proxy.targets == [target(tls_gateway)]  # one attempt: waiting does not fix a certificate


async def test_requests_go_through_the_proxy(tls_gateway: FakeServer, proxy: ConnectProxy, ca_file: str) -> None:
    settings = Settings(baseUrl=https_url(tls_gateway), proxy=proxy.url, caBundle=ca_file)
    assert await run(settings) == ANSWER
    assert proxy.targets == [target(tls_gateway)]
    assert proxy.seen[0].authorization is None


async def test_the_proxy_authorization_is_sent_to_the_proxy(
    tls_gateway: FakeServer, proxy: ConnectProxy, ca_file: str
) -> None:
    proxy.require = AUTH
    settings = Settings(baseUrl=https_url(tls_gateway), proxy=proxy.url, caBundle=ca_file, maxRetries=0)
    error = await fails(settings)
    assert error.kind == "network"
    assert await run(settings.model_copy(update={"proxyAuthorization": AUTH})) == ANSWER
    assert [c.authorization for c in proxy.seen] == [None, AUTH]
    assert "proxy-authorization" not in tls_gateway.gateway.requests[0]["headers"]  # never to the gateway


async def test_no_proxy_bypasses_the_proxy(tls_gateway: FakeServer, proxy: ConnectProxy, ca_file: str) -> None:
    settings = Settings(baseUrl=https_url(tls_gateway), proxy=proxy.url, noProxy=["127.0.0.1"], caBundle=ca_file)
    assert await run(settings) == ANSWER
    assert proxy.targets == []


async def test_strict_ssl_off_trusts_what_the_proxy_presents(tls_gateway: FakeServer, proxy: ConnectProxy) -> None:
    settings = Settings(baseUrl=https_url(tls_gateway), proxy=proxy.url, proxyStrictSSL=False)
    assert await run(settings) == ANSWER
    # Direct connections always verify: the setting is about proxies.
    error = await fails(Settings(baseUrl=https_url(tls_gateway), proxyStrictSSL=False))
    assert "vercelAiGateway.caBundle" in error.message


async def test_the_system_store_is_used_only_when_asked(
    tls_gateway: FakeServer, ca_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # OpenSSL's default store, as the OS configures it; SSL_CERT_FILE stands in for the OS here.
    monkeypatch.setenv("SSL_CERT_FILE", ca_file)
    assert await run(Settings(baseUrl=https_url(tls_gateway))) == ANSWER
    error = await fails(Settings(baseUrl=https_url(tls_gateway), systemCertificates=False))
    assert "vercelAiGateway.caBundle" in error.message


@pytest.mark.parametrize(
    ("platform", "system", "os_verifies"),
    [
        ("darwin", True, True),
        ("win32", True, True),
        ("linux", True, False),  # OpenSSL reads the OS's own store there (rfcs/0007, "Network")
        ("darwin", False, False),  # http.systemCertificates off: certifi's roots, everywhere
        ("win32", False, False),
    ],
)
def test_the_os_verifies_on_macos_and_windows(platform: str, system: bool, os_verifies: bool) -> None:
    """python-build-standalone's OpenSSL reads /etc/ssl/cert.pem on macOS, not the Keychain, and on
    Windows a copy of the store's certificates: a company CA VS Code trusts must come from the OS."""
    context = ssl_context(Settings(systemCertificates=system), platform)
    assert isinstance(context, truststore.SSLContext) is os_verifies
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    if not os_verifies:
        assert context.cert_store_stats()["x509_ca"] > 0


@pytest.mark.parametrize("platform", ["darwin", "win32"])
async def test_the_ca_bundle_reaches_the_os_verifier(
    tls_gateway: FakeServer, proxy: ConnectProxy, ca_file: str, platform: str
) -> None:
    """truststore gives the Keychain (SecTrustSetAnchorCertificates) or Windows (a chain engine
    trusting them) the certificates loaded into its context. Neither runs here; truststore's Linux
    verifier, OpenSSL on that same context, does: a real handshake shows the bundle is in it, and
    the chain and host name are checked on the direct path (aiohttp) and through a proxy (httpx)."""
    settings = Settings(baseUrl=https_url(tls_gateway), maxRetries=0)
    chosen = route(settings, platform)
    assert isinstance(chosen.direct_verify, truststore.SSLContext) and chosen.verify is chosen.direct_verify
    error = await fails(settings, platform)
    assert error.kind == "network" and "vercelAiGateway.caBundle" in error.message
    with_bundle = settings.model_copy(update={"caBundle": ca_file})
    assert await run(with_bundle, platform) == ANSWER
    assert await run(with_bundle.model_copy(update={"proxy": proxy.url}), platform) == ANSWER
    assert proxy.targets == [target(tls_gateway)]
    wrong_name = with_bundle.model_copy(update={"baseUrl": https_url(tls_gateway).replace("127.0.0.1", "localhost")})
    assert (await fails(wrong_name, platform)).kind == "network"  # its certificate names 127.0.0.1 only


def test_an_invalid_proxy_setting_is_named_without_its_value() -> None:
    new, problems = updated_settings(Settings(), {"proxy": "socks9://user:hunter2-secret@x", "noProxy": ["a"]})
    assert set(problems) == {"proxy"} and "hunter2" not in problems["proxy"]
    assert new.proxy is None and new.noProxy == ["a"]
    _, problems = updated_settings(Settings(), {"proxyAuthorization": "Basic x\r\nX-Injected: 1"})
    assert set(problems) == {"proxyAuthorization"}


@pytest.mark.parametrize(
    ("entries", "url", "bypassed"),
    [
        (["example.com"], "https://example.com/v1", True),
        (["example.com"], "https://api.example.com/v1", True),
        ([".example.com"], "https://api.example.com/v1", True),
        (["*.example.com"], "https://example.com/v1", True),
        (["example.com"], "https://notexample.com/v1", False),
        (["*"], "https://anything.test/v1", True),
        (["10.0.0.0/8"], "https://10.1.2.3/v1", True),
        (["10.0.0.0/8"], "https://11.1.2.3/v1", False),
        (["example.com:8443"], "https://example.com/v1", False),
        (["example.com:443"], "https://example.com/v1", True),
        (["[::1]:443"], "https://[::1]/v1", True),
        (["", "  "], "https://example.com/v1", False),
    ],
)
def test_no_proxy_entries(entries: list[str], url: str, bypassed: bool) -> None:
    assert bypasses_proxy(entries, url) is bypassed


async def test_the_sidecar_takes_them_at_start_and_rebuilds_on_change(
    tls_gateway: FakeServer, proxy: ConnectProxy, ca_file: str
) -> None:
    proxy.require = AUTH
    sidecar = Sidecar()
    settings: dict[str, Any] = {"proxy": proxy.url, "proxyAuthorization": AUTH, "maxRetries": 0}
    await sidecar.start(https_url(tls_gateway), settings)
    try:
        chat = {"requestId": "r1", "model": "fake/text", "messages": USER}
        with pytest.raises(JsonRpcException) as caught:
            await sidecar.request("gateway/chat", chat)
        assert "vercelAiGateway.caBundle" in str(caught.value) and "http.proxyStrictSSL" in str(caught.value)
        assert caught.value.data["kind"] == "network"
        await sidecar.request("gateway/configure", {"settings": {**settings, "caBundle": ca_file}})
        await sidecar.request("gateway/chat", {**chat, "requestId": "r2"})
        assert text_of(sidecar.parts["r2"]) == ANSWER
        assert proxy.targets == [target(tls_gateway)] * 2 and proxy.seen[1].authorization == AUTH
        assert all(AUTH not in message and "s3cret" not in message for _, message in sidecar.logs)
    finally:
        await sidecar.stop()


def test_the_proxy_credentials_are_secrets() -> None:
    settings = Settings(proxy="http://user:pa%24%24word@proxy:3128", proxyAuthorization=AUTH)
    assert set(secrets_of(settings)) == {AUTH, "pa%24%24word", "pa$$word"}
