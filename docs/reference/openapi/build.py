#!/usr/bin/env python3
"""Writes predex's OpenAPI 3.1 documents, one per public server, into this directory:
clob.json (order book), catalogue.json (catalogue), analytics.json (analytics), bridge.json.

This file is their source: edit it, run `python3 docs/reference/openapi/build.py`, commit both.
`--check` exits non-zero when a committed document differs from what this file writes
(the suite runs it). Each server serves its own document at GET /openapi.json.

Shapes follow SPEC §2 and §4; error bodies SPEC §7 (`{"error": "<message>"}`); paths
outside the spec follow docs/ (decisions.md, rfq.md, rewards.md, builders.md, ...).
"""

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent

# ---- schema helpers ------------------------------------------------------------------


def ref(name):
    return {"$ref": f"#/components/schemas/{name}"}


S = {"type": "string"}
I = {"type": "integer"}
# Analytics pages skip at most this many rows (the data API's own bound).
OFFSET = {"type": "integer", "minimum": 0, "maximum": 10000}
N = {"type": "number"}
B = {"type": "boolean"}
NS = {"type": ["string", "null"]}
DEC = {"type": "string", "description": "decimal number"}
UUID = {"type": "string", "format": "uuid"}


def arr(items):
    return {"type": "array", "items": items}


def obj(props=None, required=(), extra=True, desc=None):
    o = {"type": "object"}
    if props:
        o["properties"] = props
    if required:
        o["required"] = list(required)
    if not extra:
        o["additionalProperties"] = False
    if desc:
        o["description"] = desc
    return o


def page(items):
    """The SPEC §2.6 envelope."""
    return obj(
        {"data": arr(items), "next_cursor": S, "limit": I, "count": I},
        required=("data", "next_cursor", "limit", "count"),
    )


ERROR = obj({"error": {"type": "string", "minLength": 1}}, required=("error",), extra=False,
            desc="Every error (SPEC §7): one non-empty message.")

# ---- shared components (SPEC §2) -----------------------------------------------------

COMMON = {
    "Error": ERROR,
    "Level": obj({"price": DEC, "size": DEC}, required=("price", "size")),
}

CLOB_SCHEMAS = {
    "ApiCreds": obj({"apiKey": UUID, "secret": S, "passphrase": S, "builderId": S}, required=("apiKey", "secret", "passphrase")),
    "SignedOrder": obj(
        {
            "salt": {"type": ["integer", "string"]},
            "maker": S,
            "signer": S,
            "taker": S,
            "tokenId": S,
            "makerAmount": {"type": ["string", "integer"]},
            "takerAmount": {"type": ["string", "integer"]},
            "expiration": {"type": ["string", "integer"]},
            "nonce": {"type": ["string", "integer"]},
            "feeRateBps": {"type": ["string", "integer"]},
            "side": {"type": ["string", "integer"], "description": "BUY or SELL (or 0 / 1)"},
            "signatureType": {"type": ["integer", "string"]},
            "signature": S,
        },
        required=("salt", "maker", "signer", "taker", "tokenId", "makerAmount", "takerAmount", "expiration", "nonce",
                  "feeRateBps", "side", "signatureType", "signature"),
        desc="SPEC §2.2",
    ),
    "OrderSubmission": obj(
        {
            "order": ref("SignedOrder"),
            "owner": S,
            "orderType": {"type": "string", "enum": ["GTC", "FOK", "GTD", "FAK"]},
            "postOnly": B,
            "deferExec": B,
        },
        required=("order",),
        desc="SPEC §2.3",
    ),
    "OrderResult": obj(
        {
            "success": B,
            "orderID": S,
            "status": {**S, "description": "LIVE, MATCHED, DELAYED or CANCELED; a version 2 venue writes them in lower case, as Polymarket does"},
            "makingAmount": S,
            "takingAmount": S,
            "transactionsHashes": {**arr(S), "description": "ledger mode: each trade's settlement hash, at once; chain mode: empty (follow the trades)"},
            "tradeIds": {**arr(S), "description": "version 1 venue (SPEC)"},
            "tradeIDs": {**arr(S), "description": "version 2 venue: the same ids under Polymarket's key"},
            "errorMsg": S,
        },
        required=("success", "orderID", "status", "makingAmount", "takingAmount", "errorMsg"),
        desc="SPEC §2.4",
    ),
    "OpenOrder": obj(
        {
            "id": S, "status": S, "owner": S, "maker_address": S, "market": S, "asset_id": S, "side": S,
            "original_size": S, "size_matched": S, "price": S, "outcome": S, "expiration": S, "order_type": S,
            "associate_trades": arr(S), "created_at": I,
        },
        required=("id", "status", "market", "asset_id", "side", "original_size", "size_matched", "price"),
        desc="SPEC §2.5",
    ),
    "Trade": obj(
        {
            "id": S, "taker_order_id": S, "market": S, "asset_id": S, "side": S, "size": S, "price": S,
            "fee_rate_bps": S,
            "status": {**S, "description": "PENDING, MINED, CONFIRMED or FAILED; an unsettled trade reads MATCHED on a version 2 venue, as on Polymarket"},
            "match_time": S, "last_update": S, "outcome": S, "bucket_index": I,
            "owner": S, "maker_address": S,
            "maker_orders": arr(obj({"order_id": S, "owner": S, "maker_address": S, "matched_amount": S})),
            "transaction_hash": S, "trader_side": S, "maker_fee": S, "taker_fee": S, "error_msg": NS,
        },
        required=("id", "market", "asset_id", "side", "size", "price", "status"),
        desc="SPEC §2.7",
    ),
    "BookSummary": obj(
        {
            "market": S, "asset_id": S, "timestamp": S, "hash": S, "bids": arr(ref("Level")),
            "asks": arr(ref("Level")),
            "min_order_size": {"type": ["number", "string"], "description": "a number (SPEC); a decimal string on a version 2 venue, as Polymarket writes it"},
            "tick_size": S,
            "neg_risk": B, "last_trade_price": S,
        },
        required=("market", "asset_id", "timestamp", "hash", "bids", "asks", "tick_size", "neg_risk"),
        desc="SPEC §2.8; `hash` is the official clients' SHA-1 of the summary",
    ),
    "LastTradePrice": obj({"token_id": S, "price": S, "side": S}, required=("token_id", "price", "side")),
    "TokenIds": arr(obj({"token_id": S, "side": S}, required=("token_id",))),
    "SimplifiedMarket": obj(
        {
            "condition_id": S,
            "tokens": arr(obj({"token_id": S, "outcome": S, "price": {"type": ["number", "string"]}})),
            "rewards": obj(), "active": B, "closed": B, "archived": B, "accepting_orders": B,
        },
        required=("condition_id", "tokens"),
        desc="SPEC §2.10",
    ),
    "Market": obj(
        {"condition_id": S, "question": S, "tokens": arr(obj()), "active": B, "closed": B, "neg_risk": B,
         "minimum_tick_size": {"type": ["number", "string"]}, "minimum_order_size": {"type": ["number", "string"]}},
        required=("condition_id", "tokens"),
        desc="Polymarket's CLOB market object (docs/reference/spec-choices.md)",
    ),
    "BalanceAllowance": obj(
        {"balance": S,
         "allowances": {**obj(), "additionalProperties": S,
                        "description": "version 1 venue: conditional token ID → available amount (SPEC); version 2 venue: each exchange's address → what it may take (the balance), as Polymarket keys it"},
         "net_usdc_taker": S, "net_usdc_maker": S},
        required=("balance",), desc="SPEC §2.11"),
    "RelayTransaction": obj(
        {"transactionID": S, "transactionHash": S, "from": S, "to": S, "proxyAddress": S, "data": S, "nonce": S,
         "value": S, "signature": S, "state": {"type": "string", "enum": ["STATE_NEW", "STATE_EXECUTED", "STATE_MINED", "STATE_CONFIRMED", "STATE_FAILED"]},
         "type": S, "owner": S, "metadata": S, "createdAt": S, "updatedAt": S, "errorMsg": S},
        required=("transactionID", "transactionHash", "state", "type"), desc="docs/reference/relay.md"),
    "Notification": obj({"type": S, "owner": S, "payload": obj()}, required=("type",), desc="SPEC §2.12"),
    "Bond": obj({"conditionId": S, "clusterId": I, "amount": S, "status": S, "postedAt": S}, desc="SPEC §2.13"),
    "RfqRequest": obj(
        {"rfqId": S, "tokenId": S, "market": S, "side": S, "size": S, "status": S, "createdAt": S, "expiresAt": S,
         "acceptedQuoteId": NS, "quotes": arr(ref("RfqQuote")), "requestId": S},
        required=("rfqId", "tokenId", "side", "size", "status"),
        desc="docs/reference/rfq.md",
    ),
    "RfqQuote": obj(
        {"quoteId": S, "rfqId": S, "price": S, "size": S, "status": S, "createdAt": S, "expiresAt": S,
         "tokenId": S, "side": S},
        required=("quoteId", "rfqId", "price", "status"),
    ),
    "RfqClientRequest": obj(
        {"requestId": S, "userAddress": S, "proxyAddress": NS, "token": S, "complement": S, "condition": S,
         "side": S, "sizeIn": NS, "sizeOut": NS, "price": {"type": ["number", "null"]}, "acceptedQuoteId": NS,
         "state": S, "expiry": S, "createdAt": S},
        required=("requestId", "state"),
        desc="the official clients' RfqRequest (docs/reference/rfq.md)",
    ),
    "RfqClientQuote": obj(
        {"quoteId": S, "requestId": S, "userAddress": S, "proxyAddress": NS, "token": S, "complement": S,
         "condition": S, "side": S, "sizeIn": NS, "sizeOut": NS, "price": {"type": ["number", "null"]},
         "matchType": S, "state": S, "expiry": S, "createdAt": S},
        required=("quoteId", "requestId", "state"),
    ),
    "RfqPage": obj({"data": arr(obj()), "next_cursor": S, "limit": I, "count": I, "total_count": I},
                   required=("data", "next_cursor", "limit", "count", "total_count")),
    "SignedRfqOrder": {
        "allOf": [ref("SignedOrder"), obj({"requestId": UUID, "quoteId": UUID, "owner": S}, required=("requestId", "quoteId"))],
    },
}

# ---- operations ----------------------------------------------------------------------

L1_HEADERS = ["POLY_ADDRESS", "POLY_SIGNATURE", "POLY_TIMESTAMP", "POLY_NONCE"]
L2_HEADERS = ["POLY_ADDRESS", "POLY_SIGNATURE", "POLY_TIMESTAMP", "POLY_API_KEY", "POLY_PASSPHRASE"]


def q(name, schema=S, required=False, desc=None):
    p = {"name": name, "in": "query", "required": required, "schema": schema}
    if desc:
        p["description"] = desc
    return p


def path_param(name, desc=None):
    p = {"name": name, "in": "path", "required": True, "schema": S}
    if desc:
        p["description"] = desc
    return p


def err(desc):
    return {"description": desc, "content": {"application/json": {"schema": ref("Error")}}}


ERRORS = {
    400: "bad input (SPEC §7)",
    401: "missing or bad authentication (SPEC §7.1)",
    403: "refused (SPEC §7)",
    404: "not found",
    409: "conflict",
    429: "rate limited (SPEC §8)",
    503: "unavailable: trading mode, or a service that is not configured",
}


def op(method, path, summary, ok, auth=None, params=(), body=None, codes=(400,), ok_desc="OK", text=False, status=200):
    """One operation. `auth`: None, "L1", "L2" or "builder"; `ok`: the 200 schema."""
    o = {"summary": summary, "operationId": f"{method.lower()}{path.replace('/', '_').replace('{', '').replace('}', '').replace('-', '_')}"}
    if params:
        o["parameters"] = list(params)
    if body is not None:
        o["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    responses = {str(status): {"description": ok_desc, "content": {("text/plain" if text else "application/json"): {"schema": ok}}}}
    codes = set(codes)
    if auth:
        o["security"] = [{"L1": []}] if auth == "L1" else [{"L2": []}]
        codes.add(401)
    if auth in ("L2", "builder") and method != "GET":
        # A signature served already while its timestamp is fresh: "duplicate request".
        codes.add(409)
    for c in sorted(codes | {429} - ({429} if path in ("/", "/ok", "/openapi.json") else set())):
        responses[str(c)] = err(ERRORS[c])
    o["responses"] = responses
    return method.lower(), path, o


OK_TEXT = {"type": "string", "const": "OK"}
EMPTY = obj(extra=True, desc="an empty object")
TOKEN = q("token_id", required=True, desc="token (asset) ID")
# The order book reads an empty query value as an absent one (the official clients send
# some empty); its integer parameters say so.
INT_OR_EMPTY = {"anyOf": [I, {"type": "string", "maxLength": 0}], "description": "an integer; empty is the same as absent"}
CURSOR = q("next_cursor", desc="the previous page's next_cursor; LTE= is the end")
ANY = {}


def health(path, json=False):
    return op("GET", path, "health probe", OK_TEXT, codes=(), text=not json)


def openapi_doc():
    return op("GET", "/openapi.json", "this document", obj(), codes=())


RFQ_LIST = [
    q("requestIds", arr(S)), q("quoteIds", arr(S)), q("markets", arr(S)),
    q("state", {"type": "string", "enum": ["active", "inactive", "all"]}),
    q("sizeMin"), q("sizeMax"), q("sizeUsdcMin"), q("sizeUsdcMax"), q("priceMin"), q("priceMax"),
    q("sortBy", {"type": "string", "enum": ["created", "price", "expiry", "size"]}),
    q("sortDir", {"type": "string", "enum": ["asc", "desc"]}),
    q("limit", {"type": "integer", "minimum": 0, "maximum": 100}), q("offset"),
]

ASSET_FORM = obj({"assetIn": S, "assetOut": S, "amountIn": S, "amountOut": S, "userType": I, "ttl": I})

CLOB_OPS = [
    health("/", json=True), health("/ok", json=True), openapi_doc(),
    op("GET", "/time", "server time (UNIX seconds)", I, codes=()),
    op("GET", "/version", "the version of the orders the venue takes (1: SPEC's; the V2 clients ask before signing)", obj({"version": I}, required=("version",)), codes=()),
    # 4.1 keys and account
    op("POST", "/auth/api-key", "create the wallet's API key (first key: invitation code header; at most 20 keys per address, 400 past it; the key of an address and nonce that has one: 409, or 400 on a version 2 venue as Polymarket answers)", ref("ApiCreds"), "L1", codes=(400, 403, 409)),
    op("GET", "/auth/derive-api-key", "derive the key for the wallet and nonce", ref("ApiCreds"), "L1", codes=(400, 404)),
    op("DELETE", "/auth/api-key", "delete the calling key", EMPTY, "L2"),
    op("GET", "/auth/api-keys", "the wallet's keys", obj({"apiKeys": arr(S)}, required=("apiKeys",)), "L2"),
    op("GET", "/auth/ban-status/closed-only", "closed-only status", obj({"closed_only": B}, required=("closed_only",)), "L2"),
    op("POST", "/auth/builder-api-key", "create a builder key (at most 20 per address, 400 past it)", ref("ApiCreds"), "L2", body=obj({"builderId": S}, required=("builderId",))),
    op("GET", "/auth/builder-api-key", "the builder keys", obj({"apiKeys": arr(obj({"apiKey": S, "builderId": S, "createdAt": S}))}), "L2"),
    op("DELETE", "/auth/builder-api-key", "delete a builder key", EMPTY, "L2", params=[q("apiKey", UUID, True)], codes=(400, 404)),
    op("POST", "/auth/readonly-api-key", "create a read-only key (at most 20 per address, 400 past it)", ref("ApiCreds"), "L2"),
    op("DELETE", "/auth/readonly-api-key", "delete a read-only key", B, "L2", body=obj({"key": S}), codes=(400, 404)),
    op("GET", "/auth/readonly-api-keys", "the read-only keys", arr(S), "L2"),
    op("GET", "/auth/validate-readonly-api-key", "whether a read-only key is valid", S,
       params=[q("address", required=True), q("key", required=True)]),
    op("GET", "/balance-allowance", "balances", ref("BalanceAllowance"), "L2",
       params=[q("asset_type", {"type": "string", "enum": ["COLLATERAL", "CONDITIONAL", ""]}), q("token_id"), q("signature_type", INT_OR_EMPTY)]),
    op("GET", "/balance-allowance/update", "reconcile the balance", ref("BalanceAllowance"), "L2",
       params=[q("asset_type", {"type": "string", "enum": ["COLLATERAL", "CONDITIONAL", ""]}), q("token_id"), q("signature_type", INT_OR_EMPTY)]),
    op("GET", "/notifications", "the key's notifications, newest first: at most the newest 1,000, none older than 48 hours", arr(ref("Notification")), "L2", params=[q("signature_type", INT_OR_EMPTY)]),
    op("DELETE", "/notifications", "delete every notification of the key, listed or not", EMPTY, "L2"),
    op("POST", "/waitlist", "join the waitlist", obj(), body=obj({"email": {"type": "string", "maxLength": 254, "description": "at most 254 bytes"}}, required=("email",)), codes=(400, 409)),
    # 4.2 orders
    op("POST", "/order", "place one order", ref("OrderResult"), "L2", body=ref("OrderSubmission"), codes=(400, 503)),
    # Each element is checked on its own (SPEC §4.2): a malformed one gets a rejected result.
    op("POST", "/orders", "place up to 15 orders, each an OrderSubmission", arr(ref("OrderResult")), "L2",
       body={"type": "array", "maxItems": 15, "items": {"description": "an OrderSubmission; anything else gets a rejected result"}},
       codes=(400, 503)),
    op("DELETE", "/order", "cancel one order", obj({"canceled": arr(S), "not_canceled": obj()}), "L2",
       body=obj({"orderID": S}), codes=(400, 503)),
    op("DELETE", "/orders", "cancel orders", obj({"canceled": arr(S), "not_canceled": obj()}), "L2", body=arr(S), codes=(400, 503)),
    op("DELETE", "/cancel-all", "cancel every order of the key", obj({"canceled": arr(S), "not_canceled": obj()}), "L2", codes=(503,)),
    op("DELETE", "/cancel-market-orders", "cancel a market's orders", obj({"canceled": arr(S), "not_canceled": obj()}), "L2",
       body=obj({"market": S, "asset_id": S}), codes=(400, 503)),
    op("GET", "/data/orders", "open orders", page(ref("OpenOrder")), "L2", params=[q("id"), q("market"), q("asset_id"), CURSOR]),
    op("GET", "/data/order/{id}", "one order", ref("OpenOrder"), "L2", params=[path_param("id")], codes=(400, 404)),
    op("GET", "/data/pre-migration-orders", "the key's orders of the other order version, cancelled when the venue changed version",
       page(ref("OpenOrder")), "L2", params=[CURSOR]),
    op("GET", "/data/trades", "the key's trades", page(ref("Trade")), "L2",
       params=[q("id"), q("maker_address"), q("market"), q("asset_id"), q("before", INT_OR_EMPTY), q("after", INT_OR_EMPTY), CURSOR]),
    op("GET", "/trades", "the key's trades (the clients' path)", page(ref("Trade")), "L2",
       params=[q("id"), q("maker_address"), q("market"), q("asset_id"), q("before", INT_OR_EMPTY), q("after", INT_OR_EMPTY), CURSOR]),
    op("POST", "/v1/heartbeats", "heartbeat", obj({"status": S, "heartbeat_id": S}, required=("status",)), "L2",
       body=obj({"heartbeat_id": NS})),
    op("GET", "/auth/heartbeat", "heartbeat (legacy)", EMPTY, "L2"),
    # 4.3 book and prices
    op("GET", "/book", "a token's book", ref("BookSummary"), params=[TOKEN], codes=(400, 404)),
    op("POST", "/books", "books", arr(ref("BookSummary")), body=ref("TokenIds"), codes=(400, 404)),
    op("GET", "/price", "best price on a side", obj({"price": S}, required=("price",)),
       params=[TOKEN, q("side", {"type": "string", "enum": ["BUY", "SELL"]}, True)], codes=(400, 404)),
    op("POST", "/prices", "best prices", obj(desc="token ID → side → price"), body=ref("TokenIds"), codes=(400, 404)),
    op("GET", "/midpoint", "midpoint", obj({"mid": S}, required=("mid",)), params=[TOKEN], codes=(400, 404)),
    op("POST", "/midpoints", "midpoints", obj(desc="token ID → midpoint (4 decimals)"), body=ref("TokenIds"), codes=(400, 404)),
    op("GET", "/spread", "spread", obj({"spread": S}, required=("spread",)), params=[TOKEN], codes=(400, 404)),
    op("POST", "/spreads", "spreads", obj(desc="token ID → spread (4 decimals)"), body=ref("TokenIds"), codes=(400, 404)),
    op("GET", "/last-trade-price", "last trade price", obj({"price": S, "side": S}), params=[TOKEN], codes=(400, 404)),
    op("POST", "/last-trades-prices", "last trade prices", arr(ref("LastTradePrice")), body=ref("TokenIds"), codes=(400, 404)),
    op("GET", "/tick-size", "tick size", obj({"minimum_tick_size": {"type": ["number", "string"]}}), params=[TOKEN], codes=(400, 404)),
    op("GET", "/neg-risk", "neg-risk flag", obj({"neg_risk": B}), params=[TOKEN], codes=(400, 404)),
    op("GET", "/markets-by-token/{token_id}", "the token's market and both its tokens, YES first",
       obj({"condition_id": S, "primary_token_id": S, "secondary_token_id": S}, required=("condition_id", "primary_token_id", "secondary_token_id")),
       params=[path_param("token_id", "token (asset) ID")], codes=(400, 404)),
    op("GET", "/clob-markets/{condition_id}", "a market under the short keys the V2 clients read before they sign",
       obj({"c": S, "t": arr(obj({"t": S, "o": S})), "mts": N, "mos": N, "nr": B, "mbf": N, "tbf": N, "ao": B, "sd": I, "rfqe": B,
            "fd": obj({"r": N, "e": I, "to": B}, required=("r", "e", "to"))},
           required=("c", "t", "mts")),
       params=[path_param("condition_id")], codes=(404,)),
    op("GET", "/fee-rate", "fee rate", obj(), params=[TOKEN], codes=(400, 404)),
    op("GET", "/fees/builder-fees/{code}", "the fee rates (bps) a builder charges on orders naming its code: none on predex",
       obj({"builder_maker_fee_rate_bps": I, "builder_taker_fee_rate_bps": I}, required=("builder_maker_fee_rate_bps", "builder_taker_fee_rate_bps")),
       params=[path_param("code", "builder code (bytes32 hex)")], codes=(400, 404)),
    op("GET", "/market", "one market", ref("Market"), params=[q("market"), q("condition_id")], codes=(400, 404)),
    op("GET", "/markets", "markets, paginated", page(ref("Market")), params=[CURSOR]),
    op("GET", "/markets/{condition_id}", "one market", ref("Market"), params=[path_param("condition_id")], codes=(404,)),
    op("GET", "/simplified-markets", "simplified markets", page(ref("SimplifiedMarket")), params=[CURSOR]),
    op("GET", "/sampling-markets", "markets with a rewards program", page(ref("Market")), params=[CURSOR]),
    op("GET", "/sampling-simplified-markets", "simplified markets with a rewards program", page(ref("SimplifiedMarket")), params=[CURSOR]),
    op("GET", "/prices-history", "price history", obj({"history": arr(obj({"t": I, "p": N}))}),
       params=[q("market", required=True), q("interval"), q("startTs", I), q("endTs", I), q("fidelity", I)], codes=(400, 404)),
    op("GET", "/live-activity/events/{condition_id}", "a market's recent trades", arr(obj()), params=[path_param("condition_id")], codes=(404,)),
    op("GET", "/markets/live-activity/{condition_id}", "a market's recent trades (the V2 clients' path)", arr(obj()), params=[path_param("condition_id")], codes=(404,)),
    # rewards
    op("GET", "/rewards/markets/current", "current reward programs", obj(), codes=()),
    op("GET", "/rewards/markets/{condition_id}", "a market's reward program", obj(), params=[path_param("condition_id")], codes=(404,)),
    op("GET", "/rewards/user", "the wallet's earnings for a day", page(obj()), "L2", params=[q("date"), q("signature_type", INT_OR_EMPTY)]),
    op("GET", "/rewards/user/total", "the wallet's total earnings for a day", arr(obj()), "L2", params=[q("date"), q("signature_type", INT_OR_EMPTY)]),
    op("GET", "/rewards/user/markets", "earnings and market settings", page(obj()), "L2", params=[q("date"), q("signature_type", INT_OR_EMPTY), CURSOR]),
    op("GET", "/rewards/user/percentages", "live reward shares", obj(), "L2", params=[q("signature_type", INT_OR_EMPTY)]),
    op("GET", "/rebates", "maker rebates for a day", arr(obj()), "L2", params=[q("date")]),
    op("GET", "/order-scoring", "whether an order scores", obj({"scoring": B}, required=("scoring",)), "L2",
       params=[q("order_id", required=True)], codes=(400, 404)),
    op("POST", "/orders-scoring", "whether orders score", obj(desc="order ID → boolean"), "L2", body=obj({"orderIds": arr(S)})),
    # 4.4 builders, RFQ, bonds, resolution, CTF, relay, auctions
    op("POST", "/builder/order", "a builder-attributed order", ref("OrderResult"), "L2",
       body=obj({"order": ref("OrderSubmission")}, required=("order",)), codes=(400, 503)),
    op("POST", "/builder/cancel", "cancel a builder-attributed order", obj(), "L2", body=obj({"orderID": S}), codes=(400, 404, 503)),
    op("GET", "/builder/volume", "a builder's volume", obj(), "L2", params=[q("market")]),
    op("GET", "/builder/trades", "a builder's attributed trades", page(obj()), "L2", params=[q("market"), q("asset_id"), q("id"), CURSOR]),
    op("POST", "/rfq/request", "ask for quotes (at most 100 open per address, 400 past it)", ref("RfqRequest"), "L2",
       body={"oneOf": [obj({"tokenId": S, "side": S, "size": S, "ttl": I}, required=("tokenId", "size")), ASSET_FORM]}, codes=(400, 404)),
    op("DELETE", "/rfq/request", "withdraw a request", OK_TEXT, "L2", body=obj({"requestId": UUID}, required=("requestId",))),
    op("POST", "/rfq/quote", "quote a request", ref("RfqQuote"), "L2",
       body={"oneOf": [obj({"rfqId": UUID, "price": S, "ttl": I}, required=("rfqId", "price")), ASSET_FORM]}, codes=(400, 404)),
    op("DELETE", "/rfq/quote", "withdraw a quote", OK_TEXT, "L2", body=obj({"quoteId": UUID}, required=("quoteId",)), codes=(400, 404)),
    op("POST", "/rfq/accept", "accept a quote (SPEC §2.14)", obj({"quoteId": S, "rfqId": S, "status": S, "tradeId": S}), "L2",
       body=obj({"rfqId": UUID, "quoteId": UUID}), codes=(400, 404)),
    op("GET", "/rfq/requests", "own requests", page(ref("RfqRequest")), "L2", params=[CURSOR]),
    op("GET", "/rfq/requests/open", "open requests", page(ref("RfqRequest")), "L2", params=[CURSOR]),
    op("GET", "/rfq/quotes", "own quotes", page(ref("RfqQuote")), "L2", params=[CURSOR]),
    op("GET", "/rfq/config", "RFQ settings", obj(), "L2"),
    op("GET", "/rfq/data/requests", "requests (the clients' view)", ref("RfqPage"), "L2", params=RFQ_LIST),
    op("GET", "/rfq/data/requester/quotes", "quotes on own requests", ref("RfqPage"), "L2", params=RFQ_LIST),
    op("GET", "/rfq/data/quoter/quotes", "own quotes (the clients' view)", ref("RfqPage"), "L2", params=RFQ_LIST),
    op("GET", "/rfq/data/best-quote", "the best quote on an own request", ref("RfqClientQuote"), "L2",
       params=[q("requestId", UUID, True)], codes=(400, 404)),
    op("POST", "/rfq/request/accept", "accept a quote with a signed order", OK_TEXT, "L2", body=ref("SignedRfqOrder"), codes=(400, 404)),
    op("POST", "/rfq/quote/approve", "approve an accepted quote with a signed order", OK_TEXT, "L2", body=ref("SignedRfqOrder"),
       codes=(400, 404)),
    op("GET", "/bonds/agent/{address}", "an agent's bonds", obj({"bonds": arr(ref("Bond"))}), params=[path_param("address")]),
    op("GET", "/bonds/market/{condition_id}", "the bond backing a market", ref("Bond"), params=[path_param("condition_id")], codes=(404,)),
    op("GET", "/bonds/cluster/{cluster_id}/requirement", "a cluster's bond requirement",
       obj({"clusterId": I, "requiredAmount": S, "asset": S}), params=[path_param("cluster_id")], codes=(400, 404)),
    op("POST", "/bonds/post", "post a bond", obj(), "L2", body=obj({"conditionId": S, "amount": S}), codes=(400, 404)),
    op("POST", "/resolution/propose", "propose a resolution", obj(), "L2", body=obj({"conditionId": S, "outcome": S}), codes=(400, 403, 404)),
    op("POST", "/resolution/dispute", "dispute a proposal", obj(), "L2", body=obj({"conditionId": S}), codes=(400, 403, 404)),
    op("POST", "/ctf/split", "split collateral into a full set", obj(), "L2", body=obj({"conditionId": S, "amount": S}), codes=(400, 404)),
    op("POST", "/ctf/merge", "merge a full set into collateral", obj(), "L2", body=obj({"conditionId": S, "amount": S}), codes=(400, 404)),
    op("POST", "/ctf/redeem", "redeem a resolved market's tokens", obj(), "L2", body=obj({"conditionId": S}), codes=(400, 404)),
    op("POST", "/ctf/convert", "convert NO positions (neg-risk)", obj(), "L2", body=obj(), codes=(400, 404)),
    op("POST", "/submit", "the relayer: a wallet transaction its owner signed (`type` SAFE, SAFE-CREATE or PROXY), or predex's by-name operation (`operation`); relayer, builder or L2 headers (docs/reference/relay.md)",
       obj({"transactionID": S, "transactionHash": S, "state": S}),
       body=obj({"type": {"type": "string", "enum": ["SAFE", "SAFE-CREATE", "PROXY"]}, "from": S, "to": S, "proxyWallet": S, "data": S,
                 "nonce": S, "signature": S, "signatureParams": obj(), "metadata": S, "operation": S}),
       codes=(400, 401, 404, 409, 503)),
    op("GET", "/nonce", "the next nonce of the owner's Safe, or of its proxy wallet's relayed calls", obj({"nonce": S}, required=("nonce",)),
       params=[q("address", required=True), q("type", {"type": "string", "enum": ["SAFE", "PROXY"]}, required=True)]),
    op("GET", "/relay-payload", "the relay a proxy wallet's owner signs for (ledger mode: the zero address), and the nonce",
       obj({"address": S, "nonce": S}, required=("address", "nonce")),
       params=[q("address", required=True), q("type", {"type": "string", "enum": ["SAFE", "PROXY"]}, required=True)]),
    op("GET", "/deployed", "whether the relayer deployed a wallet (a Safe by SAFE-CREATE, a proxy wallet by its first call)", obj({"deployed": B}, required=("deployed",)),
       params=[q("address", required=True)]),
    op("GET", "/transaction", "a relayed transaction, in an array (empty: none)", arr(ref("RelayTransaction")),
       params=[q("id", UUID, required=True)]),
    op("GET", "/transactions", "the caller's relayed transactions, newest first (relayer, builder or L2 headers)", arr(ref("RelayTransaction")),
       params=[q("limit", {"type": "integer", "minimum": 1, "maximum": 500}), q("offset", {"type": "integer", "minimum": 0})], codes=(400, 401)),
    op("GET", "/relayer/api-key", "relayer keys", obj(), "L2"),
    op("POST", "/relayer/api-key", "create a relayer key (at most 20 per address, 400 past it)", obj(), "L2"),
    op("DELETE", "/relayer/api-key", "delete a relayer key", obj(), "L2", body=obj({"apiKey": S}), codes=(400, 404)),
    op("POST", "/auctions/bid", "bid in a batch auction", obj(), "L2", body=obj(), codes=(400, 404)),
    op("GET", "/auctions/{id}", "an auction", obj(), params=[path_param("id")], codes=(404,)),
    # WebSocket feeds: GET with an Upgrade header
    op("GET", "/ws/market", "market channel (WebSocket upgrade; docs/reference/spec-choices.md)", ANY, codes=(400,)),
    op("GET", "/ws/user", "user channel (WebSocket upgrade)", ANY, codes=(400,)),
]

CATALOGUE_OPS = [
    health("/ok"), openapi_doc(),
    op("GET", "/series", "series", arr(obj({"id": S, "title": S, "slug": S, "active": B})),
       params=[q("limit", I), q("offset", I), q("order", {"type": "string", "enum": ["volume", "liquidity", "start_date", "created_at"]}),
               q("ascending", B), q("closed", B), q("slug"), q("recurrence")]),
    op("GET", "/series/{id}", "one series", obj(), params=[path_param("id")], codes=(404,)),
    op("GET", "/events", "events", arr(obj({"id": S, "title": S, "slug": S, "markets": arr(obj())})),
       params=[q("limit", I), q("offset", I), q("order"), q("ascending", B), q("closed", B), q("active", B), q("archived", B),
               q("featured", B), q("id"), q("slug"), q("tag_slug"), q("series_id")]),
    op("GET", "/events/{id}", "one event", obj(), params=[path_param("id")], codes=(404,)),
    op("GET", "/events/slug/{slug}", "one event by slug", obj(), params=[path_param("slug")], codes=(404,)),
    op("GET", "/markets", "markets", arr(obj()),
       params=[q("limit", I), q("offset", I), q("order"), q("ascending", B), q("closed", B), q("active", B), q("archived", B),
               q("id"), q("slug"), q("condition_ids"), q("clob_token_ids"), q("tag_slug")]),
    op("GET", "/markets/{id}", "one market", obj(), params=[path_param("id")], codes=(404,)),
    op("GET", "/markets/slug/{slug}", "one market by slug", obj(), params=[path_param("slug")], codes=(404,)),
    op("GET", "/comments", "comments", arr(obj()),
       params=[q("parent_entity_type", required=True), q("parent_entity_id", required=True), q("limit", I), q("offset", I),
               q("order"), q("ascending", B)]),
    op("GET", "/public-search", "search", obj(), params=[q("q", required=True), q("limit_per_type", I)]),
]

ANALYTICS_OPS = [
    health("/ok"), openapi_doc(),
    op("GET", "/v1/market-positions", "a market's positions (SPEC §2.15)", arr(obj()),
       params=[q("market", required=True), q("user"), q("status", {"type": "string", "enum": ["open", "closed"]}),
               q("sortBy", {"type": "string", "enum": ["SIZE", "CASHPNL", "AVGPRICE", "CURPRICE"]}),
               q("sortDirection", {"type": "string", "enum": ["ASC", "DESC"]}), q("limit", I), q("offset", OFFSET)]),
    op("GET", "/trades", "trades (SPEC §2.16)", arr(obj({"proxyWallet": S, "side": S, "asset": S, "conditionId": S, "size": {}, "price": {},
                                                       "timestamp": I})),
       params=[q("user"), q("market"), q("eventId"), q("limit", I), q("offset", OFFSET), q("takerOnly", B),
               q("side", {"type": "string", "enum": ["BUY", "SELL"]}), q("filterType", {"type": "string", "enum": ["CASH", "TOKENS"]}),
               q("filterAmount", N)]),
    op("GET", "/positions", "a wallet's positions", arr(obj()),
       params=[q("user", required=True), q("market"), q("sizeThreshold", N), q("limit", I), q("offset", OFFSET), q("sortBy"),
               q("sortDirection")]),
    op("GET", "/value", "a wallet's position value", arr(obj()), params=[q("user", required=True), q("market")]),
    op("GET", "/holders", "a market's top holders", arr(obj()), params=[q("market", required=True), q("limit", I), q("minBalance", N)]),
    op("GET", "/activity", "a wallet's activity", arr(obj()),
       params=[q("user", required=True), q("market"), q("type"), q("side"), q("start", I), q("end", I), q("limit", I), q("offset", OFFSET)]),
    op("GET", "/v1/leaderboard", "leaderboard", arr(obj()),
       params=[q("timePeriod"), q("orderBy"), q("limit", I), q("offset", OFFSET)]),
    op("GET", "/ohlc", "candles", arr(obj()),
       params=[q("market", required=True), q("resolution"), q("startTs", I), q("endTs", I), q("limit", I)]),
]

BRIDGE_OPS = [
    health("/ok"), openapi_doc(),
    op("GET", "/supported-assets", "supported assets (SPEC §2.18)",
       obj({"supportedAssets": arr(obj({"chainId": S, "chainName": S, "token": obj(), "minCheckoutUsd": N})), "note": S}), codes=(503,)),
    op("POST", "/quote", "a quote (SPEC §2.18)", obj({"quoteId": S, "estCheckoutTimeMs": I, "estInputUsd": N, "estOutputUsd": N,
                                                      "estToTokenBaseUnit": S, "estFeeBreakdown": obj()}),
       body=obj({k: S for k in ("fromAmountBaseUnit", "fromChainId", "fromTokenAddress", "recipientAddress", "toChainId",
                                "toTokenAddress")},
                required=("fromAmountBaseUnit", "fromChainId", "fromTokenAddress", "recipientAddress", "toChainId", "toTokenAddress")),
       codes=(400, 503)),
    op("POST", "/deposit", "deposit addresses for a wallet (one set per wallet; counted in the order-book server's rate limit)", obj({"address": obj(), "note": S}), body=obj({"address": S}, required=("address",), extra=False),
       codes=(400, 503), status=201),
    op("POST", "/withdraw", "withdraw collateral to another chain", obj({"address": obj(), "note": S, "transaction": obj()}), "L2",
       body=obj({k: S for k in ("address", "toChainId", "toTokenAddress", "recipientAddr", "fromAmountBaseUnit")},
                required=("address", "toChainId", "toTokenAddress", "recipientAddr", "fromAmountBaseUnit"), extra=False),
       codes=(400, 503), status=201),
    op("GET", "/status/{address}", "a wallet's bridge transactions", obj({"transactions": arr(obj())}), params=[path_param("address")],
       codes=(400, 503)),
]

SERVERS = {
    "clob": ("predex order book (CLOB)", CLOB_OPS, CLOB_SCHEMAS),
    "catalogue": ("predex catalogue", CATALOGUE_OPS, {}),
    "analytics": ("predex analytics", ANALYTICS_OPS, {}),
    "bridge": ("predex bridge", BRIDGE_OPS, {}),
}


def document(title, ops, schemas):
    paths = {}
    for method, path, o in ops:
        paths.setdefault(path, {})[method] = o
    doc = {
        "openapi": "3.1.0",
        "info": {
            "title": title,
            "version": "1",
            "description": "Generated by docs/reference/openapi/build.py. Every error body is {\"error\": \"<message>\"} (SPEC §7).",
        },
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": {**COMMON, **schemas}},
    }
    if any("security" in o for _, _, o in ops):
        doc["components"]["securitySchemes"] = {
            "L1": {"type": "apiKey", "in": "header", "name": "POLY_SIGNATURE",
                   "description": "EIP-712 wallet signature; also POLY_ADDRESS, POLY_TIMESTAMP, POLY_NONCE (SPEC §5.1)"},
            "L2": {"type": "apiKey", "in": "header", "name": "POLY_API_KEY",
                   "description": "HMAC request signature; also POLY_ADDRESS, POLY_SIGNATURE, POLY_TIMESTAMP, POLY_PASSPHRASE (SPEC §5.3)"},
        }
    return json.dumps(doc, indent=1, sort_keys=False) + "\n"


def main():
    check = "--check" in sys.argv
    stale = []
    for name, (title, ops, schemas) in SERVERS.items():
        text = document(title, ops, schemas)
        f = HERE / f"{name}.json"
        if check:
            if not f.exists() or f.read_text() != text:
                stale.append(f.name)
        else:
            f.write_text(text)
    if stale:
        print(f"stale: {', '.join(stale)}; run python3 docs/reference/openapi/build.py", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
