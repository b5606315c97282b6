"""Upstream vendors, one declared `VendorSpec` each (`spec.py`), listed in `registry.py`."""

from gateway.signing.base import OutgoingRequest, Signer, StaticKey
from gateway.vendors.spec import VendorSpec

__all__ = ["OutgoingRequest", "Signer", "StaticKey", "VendorSpec"]
