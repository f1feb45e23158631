"""OpenAPI 3 description of what the simulator serves, under the scenario's range names."""

from __future__ import annotations

from typing import Any

from simulator.problems import PROBLEM_MEDIA_TYPE
from simulator.ranges import DEFAULT_PAGE_SIZE, MAX_PAGE_NUMBER, MAX_PAGE_SIZE
from simulator.scenario import Scenario

_NULLABLE_STRING = {"type": ["string", "null"]}


def _problem(description: str, retry_after: bool = False) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": description,
        "content": {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
    }
    if retry_after:
        response["headers"] = {
            "Retry-After": {"description": "Seconds to wait.", "schema": {"type": "integer"}}
        }
    return response


def _errors(*statuses: int) -> dict[str, Any]:
    described = {
        400: _problem("A query parameter breaks a rule; detail names it."),
        401: _problem("The X-Api-Key header is missing, unknown or revoked."),
        403: _problem("The key is restricted to campaigns."),
        429: _problem("Too many requests.", retry_after=True),
        500: _problem("Internal error."),
        502: _problem("Bad gateway."),
        503: _problem("Service unavailable.", retry_after=True),
    }
    return {str(s): described[s] for s in statuses}


def _ok(schema_ref: str, description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema_ref}"}}},
    }


def _range_parameter(name: str, range_format: str, which: str) -> dict[str, Any]:
    fmt = "date" if range_format == "date" else "date-time"
    return {
        "name": name,
        "in": "query",
        "required": True,
        "description": f"Range {which}, inclusive ({fmt}, UTC); the range spans at most 366 days.",
        "schema": {"type": "string", "format": fmt},
    }


def _page_parameter(name: str, maximum: int, default: int) -> dict[str, Any]:
    """Paging is optional and bounded; the bounds are the ones ranges.py enforces."""
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": {
            "type": "integer",
            "format": "int32",
            "minimum": 1,
            "maximum": maximum,
            "default": default,
        },
    }


def openapi_document(scenario: Scenario) -> dict[str, Any]:
    start, end = scenario.range_params
    money = {"type": "number"}
    entry_props = {
        "createdAt": {"type": "string", "format": "date-time"},
        "type": {"type": "string"},
        "amount": money,
        "description": _NULLABLE_STRING,
        "hasDescription": {"type": "boolean"},
        "channel": _NULLABLE_STRING,
        "agentId": _NULLABLE_STRING,
        "campaignId": _NULLABLE_STRING,
        "balanceAfter": money,
    }
    period = {
        "periodStart": {"type": "string", "format": "date-time"},
        "periodEnd": {"type": "string", "format": "date-time"},
    }
    names = {n: scenario.summary_fields.get(n, n) for n in ("balance", "creditsUsed")}
    names.update({n: scenario.summary_fields.get(n, n) for n in ("creditsIncluded", "asOf")})
    consumption_props = {
        names["balance"]: money,
        names["creditsUsed"]: money,
        names["creditsIncluded"]: money,
        scenario.summary_fields.get("periodStart", "periodStart"): period["periodStart"],
        scenario.summary_fields.get("periodEnd", "periodEnd"): period["periodEnd"],
        names["asOf"]: {"type": "string", "format": "date-time"},
    }
    billing_errors = _errors(401, 403, 429, 500, 502, 503)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Conversational-Agent Platform Public API (creditlens simulator)",
            "version": "v1",
        },
        "components": {
            "securitySchemes": {"ApiKey": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}},
            "schemas": {
                "Problem": {
                    "type": "object",
                    "properties": {
                        "type": _NULLABLE_STRING,
                        "title": _NULLABLE_STRING,
                        "status": {"type": ["integer", "null"], "format": "int32"},
                        "detail": _NULLABLE_STRING,
                        "instance": _NULLABLE_STRING,
                    },
                    "additionalProperties": True,
                },
                "LedgerEntry": {
                    "type": "object",
                    "properties": entry_props,
                    "required": ["createdAt", "type", "amount", "balanceAfter"],
                },
                "LedgerPage": {
                    "type": "object",
                    "properties": {
                        "data": {
                            "type": "array",
                            "items": {"$ref": "#/components/schemas/LedgerEntry"},
                        },
                        "total": {"type": "integer", "minimum": 0},
                        "pageNumber": {"type": "integer", "minimum": 1},
                        "pageSize": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE},
                    },
                    "required": ["data", "total", "pageNumber", "pageSize"],
                },
                "Consumption": {
                    "type": "object",
                    "properties": consumption_props,
                    "required": list(consumption_props),
                },
                "Breakdown": {
                    "type": "object",
                    "properties": {
                        **period,
                        "items": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "agentId": _NULLABLE_STRING,
                                    "campaignId": _NULLABLE_STRING,
                                    "channel": _NULLABLE_STRING,
                                    "credits": money,
                                },
                                "required": ["agentId", "campaignId", "channel", "credits"],
                            },
                        },
                    },
                    "required": ["periodStart", "periodEnd", "items"],
                },
                "Subscription": {
                    "type": "object",
                    "properties": {
                        "plan": {"type": "string"},
                        "status": {"type": "string"},
                        "features": {"type": "array", "items": {"type": "string"}},
                        "limits": {
                            "type": "object",
                            "properties": {
                                "monthlyCredits": money,
                                "agents": {"type": "integer"},
                                "concurrentCalls": {"type": "integer"},
                            },
                        },
                        "currentPeriodStart": {"type": "string", "format": "date-time"},
                        "currentPeriodEnd": {"type": "string", "format": "date-time"},
                    },
                    "required": ["plan", "status", "features", "limits"],
                },
                "Campaigns": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"id": {"type": "string"}, "name": {"type": "string"}},
                        "required": ["id", "name"],
                    },
                },
            },
        },
        "security": [{"ApiKey": []}],
        "paths": {
            "/Consumption/transactions": {
                "get": {
                    "operationId": "listTransactions",
                    "tags": ["Consumption"],
                    "summary": "Credit ledger of the key's company for a date range, paginated.",
                    "parameters": [
                        _range_parameter(start, scenario.range_format, "start"),
                        _range_parameter(end, scenario.range_format, "end"),
                        _page_parameter("pageNumber", MAX_PAGE_NUMBER, 1),
                        _page_parameter("pageSize", MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE),
                    ],
                    "responses": {
                        "200": _ok("LedgerPage", "A page of ledger entries."),
                        **_errors(400),
                        **billing_errors,
                    },
                }
            },
            "/Consumption": {
                "get": {
                    "operationId": "getConsumption",
                    "tags": ["Consumption"],
                    "responses": {
                        "200": _ok("Consumption", "Balance and usage."),
                        **billing_errors,
                    },
                }
            },
            "/Consumption/breakdown": {
                "get": {
                    "operationId": "getConsumptionBreakdown",
                    "tags": ["Consumption"],
                    "responses": {
                        "200": _ok("Breakdown", "Current period usage per agent/campaign/channel."),
                        **billing_errors,
                    },
                }
            },
            "/Subscription": {
                "get": {
                    "operationId": "getSubscription",
                    "tags": ["Subscription"],
                    "responses": {
                        "200": _ok("Subscription", "Plan, status, features, limits."),
                        **billing_errors,
                    },
                }
            },
            "/Campaign": {
                "get": {
                    "operationId": "listCampaigns",
                    "tags": ["Campaign"],
                    "responses": {
                        "200": _ok("Campaigns", "The company's campaigns."),
                        **_errors(401, 429, 500, 502, 503),
                    },
                }
            },
        },
    }
