"""The body cap counts the bytes actually read; a Content-Length claim only refuses early."""

import io

import pytest

from submissions.jsonbody import BodyTooLarge, read_capped


class StreamRequest:
    """The two things read_capped uses of a Django request: META and read()."""

    def __init__(self, body: bytes, content_length: str = ""):
        self.META = {"CONTENT_LENGTH": content_length}
        self._stream = io.BytesIO(body)

    def read(self, size: int) -> bytes:
        return self._stream.read(size)


def test_a_body_without_a_length_claim_is_cut_off_at_the_cap():
    with pytest.raises(BodyTooLarge):
        read_capped(StreamRequest(b"x" * 1025), cap=1024)


def test_a_body_at_the_cap_is_read_whole():
    assert read_capped(StreamRequest(b"x" * 1024), cap=1024) == b"x" * 1024


def test_a_claim_over_the_cap_is_refused_before_reading():
    request = StreamRequest(b"{}", content_length=str(10**9))
    with pytest.raises(BodyTooLarge):
        read_capped(request, cap=1024)
    assert request._stream.tell() == 0
