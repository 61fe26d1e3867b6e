"""The public trust endpoints (docs/trust-anchor.md): the board's key, signed attestations and
signed run manifests. Every refusal is JSON with a reason code; all three are in the OpenAPI
schema."""

import json
import platform
import re
import time

import django
from django.conf import settings
from django.http import HttpResponse, JsonResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.views import APIView

from anchor import selectors
from anchor.build import board_version, build_hash
from anchor.keyring import as_document, published_keys
from anchor.keys import BoardKeyError, load_board_key
from config.api_errors import Reason, json_error
from evidence.signing import canonical_json

NONCE = re.compile(r"[A-Za-z0-9._-]{1,128}")
ALG = "ed25519"


def _key_or_error():
    try:
        return load_board_key(), None
    except BoardKeyError:
        return None, json_error(
            Reason.UNAVAILABLE, "the board's signing key is not configured", 503, retry_after=60
        )


class TrustView(APIView):
    """GET only; refusals in the house JSON shape (config/api_errors.py)."""

    authentication_classes: list = []
    permission_classes: list = []


class WellKnown(TrustView):
    @extend_schema(
        summary="The board's signing key and how to verify what it signs",
        responses={200: OpenApiTypes.OBJECT, 503: OpenApiTypes.OBJECT},
    )
    def get(self, request):
        return well_known(request)


class Attestation(TrustView):
    @extend_schema(
        summary="A signed statement of the running build, echoing the caller's nonce",
        parameters=[
            OpenApiParameter(
                "nonce",
                OpenApiTypes.STR,
                required=True,
                description="1 to 128 characters of A-Z a-z 0-9 . _ -",
            )
        ],
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT},
    )
    def get(self, request):
        return attestation(request)


class RunManifestView(TrustView):
    @extend_schema(
        summary="A run's manifest signed by the board; every version kept",
        parameters=[
            OpenApiParameter(
                "version", OpenApiTypes.INT, description="an earlier version (default: latest)"
            )
        ],
        responses={200: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT},
    )
    def get(self, request, run_id: str):
        return run_manifest(request, run_id)


def well_known(request):
    try:
        keys = published_keys()
    except BoardKeyError:
        return json_error(
            Reason.UNAVAILABLE, "the board's signing key is not configured", 503, retry_after=60
        )
    return JsonResponse(
        {
            "name": "AEON Board",
            "site": settings.AEON_SITE_URL or None,
            "version": board_version(),
            "alg": ALG,
            "public_key": keys[0].public_key,
            # The current key and every key it replaced, with when each was in use: a manifest
            # version verifies only with one of these (docs/trust-anchor.md §Published keys).
            "keys": as_document(keys),
            "build_hash": build_hash(),
            "attestation_endpoint": "/api/attestation",
            "verify": {
                "canonical_json": (
                    'json.dumps(obj, sort_keys=True, separators=(",", ":")), UTF-8 '
                    "(ASCII escapes, as pods sign)"
                ),
                "signature": "standard base64 of the ed25519 signature, public_key standard "
                "base64 of the raw 32 bytes",
                "attestation": "the signature covers the canonical JSON of the answer without "
                "its `signature` member",
                "manifest_endpoint": "/api/runs/{run_id}/manifest",
                "manifest": "the signature covers the canonical JSON of `manifest`; "
                "`?version=N` serves an earlier version, `versions` lists them all",
                "keys": "a manifest's envelope names the key that signed it: it must be one of "
                "`keys` (the current key, or a retired one for versions signed before)",
            },
        }
    )


def attestation(request):
    nonce = request.GET.get("nonce", "")
    if not NONCE.fullmatch(nonce):
        return json_error(
            Reason.BAD_REQUEST, "nonce: 1 to 128 characters of A-Z a-z 0-9 . _ -", 400
        )
    board_key, error = _key_or_error()
    if error:
        return error
    body = {
        "v": 1,
        "build_hash": build_hash(),
        "public_key": board_key.public_key_b64,
        "alg": ALG,
        "ts": int(time.time()),
        "nonce": nonce,
        "runtime": {
            "board": board_version(),
            "python": platform.python_version(),
            "django": django.get_version(),
        },
    }
    body["signature"] = board_key.sign(canonical_json(body))
    response = JsonResponse(body)
    response["Cache-Control"] = "no-store"
    return response


def run_manifest(request, run_id: str):
    versions = selectors.published_manifests(run_id)
    if not versions:
        note = "no such run" if versions is None else "this run has no signed manifest yet"
        return json_error(Reason.NOT_FOUND, note, 404)
    wanted = request.GET.get("version")
    if wanted is None:
        chosen = versions[-1]
    else:
        chosen = next((m for m in versions if str(m.version) == wanted), None)
        if chosen is None:
            return json_error(Reason.NOT_FOUND, f"no version {wanted} of this manifest", 404)
    listing = [
        {
            "version": m.version,
            "signed_at": m.signed_at.isoformat(),
            "sha256": m.document_sha256,
            "change": m.change or None,
            "url": f"/api/runs/{run_id}/manifest?version={m.version}",
        }
        for m in versions
    ]
    # The signed bytes are served as they were signed (they are canonical JSON already).
    envelope = (
        '{"alg":"ed25519","manifest":'
        + chosen.document
        + ',"public_key":'
        + json.dumps(chosen.public_key)
        + ',"signature":'
        + json.dumps(chosen.signature)
        + ',"versions":'
        + json.dumps(listing, sort_keys=True, separators=(",", ":"))
        + "}"
    )
    return HttpResponse(envelope, content_type="application/json")
