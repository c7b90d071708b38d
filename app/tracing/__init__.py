"""Where is my payment? One payment's whole life, found by message_id, payment_reference or batch row.

`remit trace`, `GET /v1/payments/{id}` and the console's payment page all call `trace_payment`.
"""
