"""The layout of the rows the Spark job hands to the driver (summary.py builds them; fold.py and
break_lines.py read them). No pyspark here: the driver side is imported by processes that never start Spark."""

# Per broken message, what the driver needs to write its detail line (see break_lines.py).
BREAK_EVIDENCE = (
    "n_ledger",
    "n_processed",
    "l_amount",
    "l_ccy_h",
    "o_amount",
    "o_ccy_h",
    "o_expires",
    "c_amount",
    "c_ccy_h",
    "ref_differs",
    "n_core_transfers",
)
TOTALS = ("totals_accepted_count", "totals_accepted_cents", "control_count", "control_cents")
NAME_KEYS = ("corr_h", "tenant_h", "ccy_h")  # a batch x tenant x currency, as name hashes (names.py)
BREAK_KEY = ("break_hi", "break_lo")  # a broken message's message_id (the halves of classify.MESSAGE_KEY)
# origin (file or amqp) and in_core (the core's journal has its transfer) split a group's rows by how its
# messages came and whether the core booked them: a few rows more per batch, no new shuffle.
GROUP_KEYS = (*NAME_KEYS, "status", "origin", "in_core", "is_totals", *BREAK_KEY)
