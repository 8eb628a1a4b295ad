"""One error hierarchy. Codes are Azure's strings; only api/errors.py knows how to render them."""


class EmulatorError(Exception):
    status = 500
    code = "InternalServerError"

    def __init__(self, message: str, *, target: str | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.target = target
        if code:
            self.code = code


class BadRequest(EmulatorError):
    status = 400
    code = "BadRequest"


class ValidationFailed(BadRequest):
    code = "ValidationError"


class NotSupported(BadRequest):
    """An operation of Azure's that amlemu does not offer (yet)."""
    code = "OperationNotSupported"


class PathEscape(BadRequest):
    """A path under the data directory would lead elsewhere: a link (which is never followed), '..'."""
    code = "PathEscape"


class Unauthorized(EmulatorError):
    status = 401
    code = "AuthenticationFailed"


class NotFound(EmulatorError):
    status = 404
    code = "ResourceNotFound"


class Conflict(EmulatorError):
    status = 409
    code = "Conflict"


class InvalidTransition(Conflict):
    code = "OperationNotAllowed"


class RuntimeUnavailable(EmulatorError):
    status = 503
    code = "ServiceUnavailable"


class Forbidden(EmulatorError):
    status = 403
    code = "AuthorizationFailure"


class RangeNotSatisfiable(EmulatorError):
    status = 416
    code = "InvalidRange"


class RequestTooLarge(EmulatorError):
    status = 413
    code = "RequestBodyTooLarge"
