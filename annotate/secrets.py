"""Keys derived from SECRET_KEY, one per purpose (blinding tokens, option order, gold draw),
so that no annotator can work out a token, an order or which item is gold."""
import hashlib
import hmac

from django.conf import settings


def secret(purpose: str) -> bytes:
    """A key for one purpose, derived from SECRET_KEY (the blinding tokens, the gold draw)."""
    return hmac.new(settings.SECRET_KEY.encode(), f"humeval:{purpose}".encode(), hashlib.sha256).digest()
