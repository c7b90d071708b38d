"""Console forms, read only once the caller is known. FastAPI reads a route's `Form` and `File` parameters
(spooling every part with a filename to a temporary file) before it runs any dependency, the session check
included; so the console's routes declare none. A form is a pydantic model read by a dependency that needs
the session first (`session_form(Model)`), or by the login after its own pre-check, with no file part allowed
(only the upload takes one, app/admin/console/batches.py). Bodies are bounded before any of this
(app/admin/body_limit.py)."""

from typing import Annotated, Any, TypeVar, get_origin

from fastapi import Depends, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field, ValidationError
from starlette.datastructures import FormData

from app.admin.console.context import Console

FormText = Annotated[str, Field(max_length=500)]
MAX_FIELDS = 1000  # a replay's confirmation carries one `ids` field per dead letter it shows
Model = TypeVar("Model", bound=BaseModel)


async def read_form(request: Request, model: type[Model]) -> Model:
    """The request's form as `model`; 422 (like FastAPI's own forms) when it does not fit, 400 for a file
    part or a broken body."""
    async with request.form(max_files=0, max_fields=MAX_FIELDS) as form:
        values = form_values(form, model)
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]) from None


def form_values(form: FormData, model: type[BaseModel]) -> dict[str, Any]:
    """What the form says for each field of `model`; an empty value counts as not given, as in FastAPI."""
    values: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        key = field.alias or name
        if get_origin(field.annotation) is list:
            values[key] = [v for v in form.getlist(key) if v != ""]
        elif (value := form.get(key)) not in (None, ""):
            values[key] = value
    return values


def session_form(model: type[Model]) -> Any:
    """`Depends(...)` for a route's form: read after the session is checked, as `model`."""

    async def read(request: Request, ctx: Console) -> Model:  # `ctx`: the session is checked first
        return await read_form(request, model)

    return Depends(read)
