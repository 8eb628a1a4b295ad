"""The Blob service's wire shapes: XML bodies, RFC 1123 dates and property headers, as azure-storage-blob reads them."""

import uuid
from email.utils import format_datetime
from xml.etree import ElementTree as ET

from fastapi.responses import Response

from emulator.errors import BadRequest
from emulator.services.blobs import BlobProps

STORAGE_VERSION = "2025-01-05"
XML_TYPE = "application/xml"


def http_date(props_time) -> str:
    return format_datetime(props_time, usegmt=True)


def base_headers(version: str | None = None) -> dict[str, str]:
    return {"x-ms-request-id": str(uuid.uuid4()), "x-ms-version": version or STORAGE_VERSION}


def property_headers(props: BlobProps) -> dict[str, str]:
    headers = {"ETag": props.etag, "Last-Modified": http_date(props.modified_at),
               "x-ms-creation-time": http_date(props.created_at), "x-ms-blob-type": "BlockBlob",
               "x-ms-lease-status": "unlocked", "x-ms-lease-state": "available", "x-ms-server-encrypted": "true",
               "Accept-Ranges": "bytes", "Content-Type": props.headers.get("Content-Type",
                                                                           "application/octet-stream")}
    headers.update({k: v for k, v in props.headers.items() if k != "Content-Type"})
    headers.update({f"x-ms-meta-{k}": v for k, v in props.metadata.items()})
    if props.md5:
        headers["Content-MD5"] = props.md5
    return headers


def error(status: int, code: str, message: str, head: bool = False) -> Response:
    """A storage error; answers to HEAD carry only the headers (x-ms-error-code is what clients read)."""
    root = ET.Element("Error")
    ET.SubElement(root, "Code").text = code
    ET.SubElement(root, "Message").text = f"{message}\nRequestId:{uuid.uuid4()}"
    body = b'<?xml version="1.0" encoding="utf-8"?>' + ET.tostring(root)
    return Response(b"" if head else body, status_code=status, media_type=XML_TYPE,
                    headers={**base_headers(), "x-ms-error-code": code})


def _properties(parent: ET.Element, props: BlobProps) -> None:
    node = ET.SubElement(parent, "Properties")
    values = {"Creation-Time": http_date(props.created_at), "Last-Modified": http_date(props.modified_at),
              "Etag": props.etag, "Content-Length": str(props.size),
              "Content-Type": props.headers.get("Content-Type", "application/octet-stream"),
              "Content-Encoding": props.headers.get("Content-Encoding"),
              "Content-Language": props.headers.get("Content-Language"), "Content-MD5": props.md5,
              "Cache-Control": props.headers.get("Cache-Control"),
              "Content-Disposition": props.headers.get("Content-Disposition"),
              "BlobType": "BlockBlob", "AccessTier": "Hot", "AccessTierInferred": "true",
              "LeaseStatus": "unlocked", "LeaseState": "available", "ServerEncrypted": "true"}
    for key, value in values.items():
        if value is not None:
            ET.SubElement(node, key).text = value


def blob_list(service_url: str, container: str, blobs: list[BlobProps], prefixes: list[str], query: dict,
              next_marker: str | None, with_metadata: bool) -> bytes:
    root = ET.Element("EnumerationResults", ServiceEndpoint=service_url, ContainerName=container)
    for key, tag in (("prefix", "Prefix"), ("marker", "Marker"), ("maxresults", "MaxResults"),
                     ("delimiter", "Delimiter")):
        if query.get(key):
            ET.SubElement(root, tag).text = query[key]
    items = ET.SubElement(root, "Blobs")
    entries = [(b.name, b) for b in blobs] + [(p, None) for p in prefixes]
    for name, props in sorted(entries, key=lambda e: e[0]):
        if props is None:
            ET.SubElement(ET.SubElement(items, "BlobPrefix"), "Name").text = name
            continue
        blob = ET.SubElement(items, "Blob")
        ET.SubElement(blob, "Name").text = name
        _properties(blob, props)
        if with_metadata:
            meta = ET.SubElement(blob, "Metadata")
            for key, value in props.metadata.items():
                ET.SubElement(meta, key).text = value
    ET.SubElement(root, "NextMarker").text = next_marker
    return b'<?xml version="1.0" encoding="utf-8"?>' + ET.tostring(root)


def block_ids(body: bytes) -> list[str]:
    """The ids of a Put Block List body: <BlockList><Latest|Committed|Uncommitted>id</...></BlockList>."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        raise BadRequest(f"The block list is not valid XML: {exc}.", target="BlockList",
                         code="InvalidXmlDocument") from exc
    if root.tag != "BlockList":
        raise BadRequest("The block list must be a <BlockList> element.", target="BlockList",
                         code="InvalidXmlDocument")
    ids = [(child.text or "").strip() for child in root]
    if any(child.tag not in ("Latest", "Committed", "Uncommitted") for child in root) or not all(ids):
        raise BadRequest("Block list entries must be non-empty <Latest>, <Committed> or <Uncommitted> elements.",
                         target="BlockList", code="InvalidXmlDocument")
    return ids
