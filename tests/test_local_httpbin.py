"""The local httpbin the live tests use answers as the real one does."""

import httpx


def test_httpbin_echoes_headers_and_statuses(httpbin):
    response = httpx.get(f"{httpbin.url}/get", params={"item": "milk"}, headers={"Authorization": "Bearer k-123"})
    assert response.status_code == 200
    body = response.json()
    assert body["args"] == {"item": "milk"}
    # The echo that leaked the service key on the seed page:
    assert body["headers"]["Authorization"] == "Bearer k-123"
    assert httpx.get(f"{httpbin.url}/status/429").status_code == 429
    assert httpx.get(f"{httpbin.url}/status/404").status_code == 404
