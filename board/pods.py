"""Who measured a benchmark (docs/champions.md §Reproductions): keys are free, so the device keys
that submitted from one network — the same /24 of IPv4, the same /48 of IPv6 — count as one pod.

The network comes from the address each committed final arrived from, as the ingest log
records it (the address rate limits read, `submissions.views.client_ip`). It is never published:
only the grouping is used. An address that is not public (loopback, a private range, link-local)
says nothing about which machine sent it and groups nothing.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from django.apps import apps

IPV4_PREFIX = 24
IPV6_PREFIX = 48


def network_of(address: str | None) -> str | None:
    """The /24 (IPv4) or /48 (IPv6) holding a public address; None for any other."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if not ip.is_global:
        return None
    prefix = IPV4_PREFIX if ip.version == 4 else IPV6_PREFIX
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))


def pods_of(keys: Iterable[str]) -> dict[str, str]:
    """Each key → its pod: the smallest key of the keys linked to it by a shared network (itself
    when it shares none). One query, over the committed finals of these keys."""
    keys = sorted(set(keys))
    parent = {key: key for key in keys}
    if not keys:
        return parent
    log = apps.get_model("submissions", "IngestLogEntry")
    seen = (
        log.objects.filter(key_fingerprint__in=keys, route="results", status=200)
        .exclude(client_ip=None)
        .values_list("key_fingerprint", "client_ip")
        .distinct()
    )

    def root(key: str) -> str:
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    first_key: dict[str, str] = {}
    for key, address in seen:
        network = network_of(address)
        if network is None or key not in parent:
            continue
        other = first_key.setdefault(network, key)
        a, b = root(key), root(other)
        if a != b:
            parent[max(a, b)] = min(a, b)
    return {key: root(key) for key in keys}
