"""The body cap counts the bytes actually read; a Content-Length claim only refuses early."""

import hashlib
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


def test_a_body_at_the_cap_is_read_whole_and_hashed_while_read():
    for declared in ("", "1024"):
        body = read_capped(StreamRequest(b"x" * 1024, declared), cap=1024)
        assert body.data == b"x" * 1024
        assert body.sha256 == hashlib.sha256(b"x" * 1024).hexdigest()


def test_a_body_shorter_than_its_claim_is_what_was_read():
    body = read_capped(StreamRequest(b"{}", content_length="100"), cap=1024)
    assert (body.data, body.sha256) == (b"{}", hashlib.sha256(b"{}").hexdigest())


def test_a_claim_over_the_cap_is_refused_before_reading():
    request = StreamRequest(b"{}", content_length=str(10**9))
    with pytest.raises(BodyTooLarge):
        read_capped(request, cap=1024)
    assert request._stream.tell() == 0
