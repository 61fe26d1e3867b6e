"""Django's Redis cache backend, keeping one Redis client per connection pool, and reading a
small integer on a connection of its own.

The stock backend builds a new `redis.Redis` (with its table of ~170 response callbacks) for
every cache operation; on a cached read answer that was a third of the time spent. The answer
cache reads the board generation on every cached answer (board/answer_cache.py): `get_int` sends
that one GET on a connection the thread keeps, without the client's pool checkout, health check
and retry wrapper, which cost more than the round trip itself."""

import os
import threading

import redis
from django.core.cache.backends.redis import RedisCache, RedisCacheClient


class _ReusedClients(RedisCacheClient):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clients = {}

    def get_client(self, key=None, *, write=False):
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:  # a client is thread-safe: it borrows connections from its pool
            pool = self._get_connection_pool(write)
            client = self._clients[index] = self._client(connection_pool=pool)
        return client


class ReusedClientRedisCache(RedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = _ReusedClients
        self._own = threading.local()

    def _own_connection(self):
        """This thread's connection for `get_int`, made with the pool's settings (a forked
        process makes its own: a socket is never shared across a fork)."""
        held = getattr(self._own, "held", None)
        if held is None or held[0] != os.getpid():
            pool = self._cache._get_connection_pool(False)
            held = self._own.held = (os.getpid(), pool.connection_class(**pool.connection_kwargs))
            self._own.commands = {}
        return held[1]

    def get_int(self, key, default=None, version=None):
        """What `get` answers for a key holding an integer (as `incr` and `add` of an int store
        it), in one GET on this thread's own connection; a broken connection is made anew and
        the GET sent once more."""
        key = self.make_and_validate_key(key, version=version)
        connection = self._own_connection()
        command = self._own.commands.get(key)
        if command is None:  # the same few keys every time: packed once
            command = self._own.commands[key] = connection.pack_command("GET", key)
        try:
            connection.send_packed_command(command)
            value = connection.read_response()
        except (redis.ConnectionError, redis.TimeoutError):
            connection.disconnect()
            connection.send_packed_command(command)
            value = connection.read_response()
        return default if value is None else self._cache._serializer.loads(value)
