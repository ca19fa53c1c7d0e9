"""Read a file of measured serving runs (AIConfigurator's silicon_sample.csv columns) and resolve each run:
system to a hardware preset, Hugging Face id to a model preset, the layout (TP, PP, attention DP, MoE TP/EP;
for disaggregated runs the prefill_ and decode_ workers'), the number formats, and the features the GPU
serving model reads. A run that cannot be modelled keeps its row with the reason."""

from __future__ import annotations

import io
import math
import re
import warnings
from pathlib import Path

from wsemoe.config.files import read_text
from wsemoe.errors import ConfigError
from wsemoe.specs.layers import MAX_CONTEXT
from wsemoe.validate.silicon.checkpoints import KV_COLUMN, KV_QUANT, harness, kv_quant
from wsemoe.validate.silicon.ids import SYSTEMS, model_preset
from wsemoe.wording import number

# batch_size is the concurrency of a run, per attention-DP rank when attention_dp_size > 1.
LAYOUT = ("batch_size", "tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")
WORKER = ("batch_size", "num_workers", "tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")
COLUMNS = ("id", "silicon_data_source", "backend", "backend_version", "model_path", "system", "precision", "mode",
           "isl", "osl", "gemm_quant_mode", "moe_quant_mode", *LAYOUT,
           *(f"prefill_{c}" for c in WORKER), *(f"decode_{c}" for c in WORKER), "silicon_ttft_ms", "silicon_tpot_ms")
NUMERIC = ("isl", "osl", "silicon_ttft_ms", "silicon_tpot_ms", *LAYOUT, *(f"{w}_{c}" for w in ("prefill", "decode")
                                                                         for c in WORKER))
UNREADABLE = "_unreadable"   # read's note of a row's first cell that should be a number and is not
# A configuration: everything that sets the run, its layout columns read as the layout they spell (config_key), not
# when it was measured. The backend's version is the software that ran it: one layout, load and build measured
# twice is one configuration, but two builds are two (the given b200 DeepSeek-R1 TensorRT-LLM runs of 1.2.0rc6.post2
# and .post3 at attention DP 8, EP 8, 128 requests, 1,024/8,192 tokens measure TTFT 769 and 1,386 ms, TPOT 19.2 and
# 11.7 ms: a median of the two is neither). The KV cache's quant mode is an optional column (the given file has
# none): read where a file has it, else empty.
CONFIG = ("backend", "backend_version", "model_path", "system", "precision", "mode", "isl", "osl", "gemm_quant_mode", "moe_quant_mode",
          KV_COLUMN, *LAYOUT, *(f"prefill_{c}" for c in WORKER), *(f"decode_{c}" for c in WORKER))
# Quant modes to the weight format (wsemoe/cost/node/formats.py: its bytes and the peak its matmuls run at);
# fp8_block carries one scale per 128x128 block (bytes negligible); nvfp4 and mxfp4 carry their block scales and
# multiply at the FP4 peak; w4afp8 stores INT4 weights and multiplies at the FP8 peak. Weight-only modes
# (w4a16_mxfp4: gpt-oss's MXFP4 experts with 16-bit activations; int8_wo, int4_wo) store narrow weights and
# multiply at the 16-bit peak.
QUANT = {"fp8": "fp8", "fp8_block": "fp8", "fp8_ootb": "fp8", "nvfp4": "nvfp4", "fp4": "fp4", "mxfp4": "mxfp4",
         "w4afp8": "w4afp8", "float16": "bf16", "bf16": "bf16", "fp16": "bf16", "w4a16_mxfp4": "mxfp4_w4a16",
         "int8_wo": "int8_wo", "int4_wo": "int4_wo"}
BACKENDS = ("trtllm", "vllm", "sglang")
# How a layout wider than one server is read when its MoE split is moe_tp x moe_ep with both above 1:
# "one_server": tp_size (or attention_dp_size) counts moe_tp as well, and the run used tp/moe_tp (dp/moe_tp)
# GPUs for attention with the experts split moe_ep ways only, inside one server. Evidence: of the given rows
# wider than one server, 83 of 210 carry TTFT and TPOT identical to the last digit to a one-server run of that
# tp/moe_tp x moe_ep layout (e.g. tp 64, moe 8x8 = tp 8, EP 8), which different hardware cannot produce; the
# others measure like one-server runs too (no network-bound step). "as_written": the columns as they stand.
WIDE_LAYOUT = "one_server"
MAX_ROWS = 1_000_000
MAX_BYTES = 2**29   # 512 MiB: MAX_ROWS rows of the shipped file's 360 bytes each fit


def read(path: Path):
    """The file as a DataFrame of its columns (every required column present), or a one-line error."""
    import pandas as pd

    # Read as every user-named input is (config/files.read_text): a pipe or device is refused before it is
    # opened (pandas would block on a FIFO for ever), and the size is capped
    text = read_text(path, MAX_BYTES, "CSV file of measured runs")
    _no_column_twice(text, path)
    try:
        # index_col=False: a row with more fields than the header is not read shifted by one column; pandas then
        # drops its extra fields with a warning, which is the error here
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(io.StringIO(text), nrows=MAX_ROWS + 1, dtype={"id": str, "backend_version": str},
                                index_col=False)
    except pd.errors.ParserWarning:
        raise ConfigError("a row has more fields than the header", loc=(str(path),)) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"not a CSV file of measured runs ({type(exc).__name__})", loc=(str(path),)) from None
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ConfigError(f"missing column '{missing[0]}' (a silicon file has: {', '.join(COLUMNS[:6])}, ...)",
                          loc=(str(path),))
    if len(frame) > MAX_ROWS:
        raise ConfigError(f"more than {MAX_ROWS:,} rows", loc=(str(path),))
    # the number cells as written (pandas would read 'nan' as empty and 'true' as 1): a cell that is not empty
    # and not a number is the row's reason, never a default
    cells = pd.read_csv(io.StringIO(text), nrows=MAX_ROWS + 1, dtype=str, keep_default_na=False, index_col=False,
                        usecols=list(NUMERIC))
    unreadable = pd.Series("", index=frame.index)
    for col in NUMERIC:
        given = cells[col].str.strip()
        frame[col] = _numbers(given.where(given != ""))
        bad = (given != "") & frame[col].isna()   # 'inf' and a 400-digit integer read as ±inf: the checks say why
        unreadable = unreadable.where((unreadable != "") | ~bad, f"{col} '" + given.str[:40] + "'")
    frame[UNREADABLE] = unreadable   # the first cell of a row that is not a number: its reason (`resolve`)
    if KV_COLUMN not in frame.columns:
        frame[KV_COLUMN] = ""
    frame["id"] = frame["id"].fillna("").astype(str)
    return frame


def _numbers(column):
    """A column of text cells as floats: a cell that is not a number NaN, an integer too large for a float ±inf
    (as float() reads its digits), never an overflow."""
    return column.map(_float).astype(float)


def _float(value) -> float:
    if not isinstance(value, str):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def _no_column_twice(text: str, path: Path) -> None:
    """A header naming a column twice is refused, as a key given twice in YAML or JSON is (pandas would read
    the second as 'id.1' and the first alone would count)."""
    import csv

    header = next(csv.reader(io.StringIO(text.split("\n", 1)[0])), [])
    twice = next((c for i, c in enumerate(header) if c in header[:i]), None)
    if twice is not None:
        raise ConfigError(f"the header names column '{twice[:40]}' twice", loc=(str(path),))


def _cell(value) -> str:
    """A text cell as the file gives it ('' where it is empty, not pandas' 'nan')."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


MAX_REQUESTS = 10**6  # concurrent requests a row may name: far past any measured serving run
MAX_GPUS = 100_000    # GPUs a layout may span: far past any serving deployment (tp_size 1e12 was modelled)


def _num(value, default=None):
    """A number from a cell (empty or unreadable: default)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(x) else x


def source_concurrency(row) -> float | None:
    """The concurrency the benchmark ran at, as `silicon_data_source` records it (`silicon_concurrency=N`), or
    None. It is the measured fact batch_size is derived from: of the 1,892 given rows that carry it, 1,891 equal
    batch_size x attention_dp_size and one (an attention-DP 64 run whose id says c32) carries the total in
    batch_size, which read per rank would be 2,048 requests."""
    m = re.search(r"silicon_concurrency=(\d+(?:\.\d+)?)", str(row.get("silicon_data_source") or ""))
    return float(m.group(1)) if m and float(m.group(1)) >= 1 else None


def concurrency(row) -> float | None:
    """The concurrent requests of a run as the model reads them: the benchmark's own record, else batch_size over
    every attention-DP rank (the file gives each rank's); None when the row has no batch_size."""
    per_rank = _num(row.get("batch_size"))
    if per_rank is None:
        return source_concurrency(row)
    return source_concurrency(row) or per_rank * (_num(row.get("attention_dp_size"), 1.0) or 1.0)


def _fmt(mode, precision) -> str | None:
    """Format of weights in a quant mode (empty: the run's precision; none: 16-bit); None when unknown."""
    if isinstance(mode, str) and mode.strip():
        return QUANT.get(mode.strip().lower())
    if isinstance(precision, str) and precision.strip():
        return QUANT.get(precision.strip().lower())
    return "bf16"


def layout(row, prefix: str = "", server: int | None = None) -> dict | str:
    """The parallel layout of a run (or of its `prefix` worker), or the reason it cannot be read; `server`:
    GPUs of one server of the system (None: one NVLink domain holds every layout)."""
    get = (lambda c: row.get(f"{prefix}{c}")) if prefix else row.get
    conc = _num(get("batch_size"))
    tp, pp = _num(get("tp_size"), 1.0), _num(get("pp_size"), 1.0)
    dp = _num(get("attention_dp_size"), 1.0) or 1.0
    if conc is None or conc < 1:
        return f"no {prefix}batch_size (concurrent requests)"
    if min(tp, pp, dp) < 1:
        return f"{prefix}tp/pp/attention_dp sizes must be at least 1"
    if any(not float(x).is_integer() for x in (conc, tp, pp, dp)) or conc > MAX_REQUESTS or tp * pp * dp > MAX_GPUS:
        return (f"{prefix}batch_size and the tp/pp/attention_dp sizes must be whole numbers (batch_size at most "
                f"{MAX_REQUESTS:,} requests, tp x pp x attention_dp at most {MAX_GPUS:,} GPUs)")
    conc = conc * dp  # with attention DP the file gives each rank's batch (e.g. c256 over DP 64 is 4)
    if not prefix:  # an aggregated run: the benchmark's own record of its concurrency, where it gives one
        conc = source_concurrency(row) or conc
    moe_tp, moe_ep = _num(get("moe_tp_size"), 0.0), _num(get("moe_ep_size"), 0.0)
    if moe_tp < 1 or moe_ep < 1:  # 0 or empty: no MoE split given (dense models): experts follow TP
        moe_tp, moe_ep = tp * dp, 1.0
    gpus = max(tp * dp, moe_tp * moe_ep) * pp
    if WIDE_LAYOUT == "one_server" and server and gpus > server and moe_tp > 1 and moe_ep > 1:
        if tp % moe_tp == 0:
            tp = tp / moe_tp
        elif dp % moe_tp == 0:
            dp = dp / moe_tp
        moe_tp, gpus = 1.0, max(tp * dp, moe_ep) * pp
    if moe_tp * moe_ep > tp * dp and (moe_tp * moe_ep) % (tp * dp) == 0:
        # every GPU that holds experts runs every layer, attention too: with no attention DP given, the GPUs past
        # tp hold replicas of the attention (vLLM's -dp beside -tp: its MoE layers are split over dp x tp, so
        # the given vLLM runs of Qwen3-235B write tp 1 with moe_tp 2 or 4)
        dp = moe_tp * moe_ep / tp
    return {"C": conc, "tp": tp, "pp": pp, "dp": dp, "moe_tp": moe_tp, "moe_ep": moe_ep, "gpus": gpus}


def config_key(row, res: dict) -> tuple:
    """The configuration resolved run `res` (of file row `row`) belongs to: CONFIG's columns as written, but the
    layout columns of the workers it runs by the layout `layout` read from them (res['workers'], what the model
    evaluates), so that two spellings of one layout are one configuration whose runs' median is taken, and the
    grouping and the model cannot disagree on what a layout is. TensorRT-LLM launches a layout as one
    tensor_parallel_size per stage (moe_tp x moe_ep equal to it; enable_attention_dp runs attention over the same
    ranks) and SGLang as --tp with --dp under --enable-dp-attention and --ep; AIConfigurator's columns hold
    tp_size x attention_dp_size = moe_tp_size x moe_ep_size (its sdk/models.py asserts it), the GPUs of a stage.
    So a file's tp / attention DP / MoE columns are one choice of spelling, and some given rows multiply tp or DP by
    moe_tp besides: 8 GPUs at attention DP 8, EP 8 are (tp 1, DP 8, MoE 1 x 8) or, as given rows
    also write them, (tp 1, DP 64, MoE 8 x 8), and TP 8, EP 8 is (tp 8, MoE 1 x 8) or (tp 64, MoE 8 x 8): the same
    measurements to the last digit (WIDE_LAYOUT). The other columns (backend, version, precision, quant modes, isl/osl,
    mode, worker counts) stay as written."""
    prefixes = ("",) if res["mode"] == "agg" else ("prefill_", "decode_")
    read = {f"{p}{c}" for p in prefixes for c in (LAYOUT if not p else WORKER) if c != "num_workers"}
    shape = ("C", "tp", "pp", "dp", "moe_tp", "moe_ep", "gpus")
    return (*(str(row.get(c)) for c in CONFIG if c not in read), res.get("harness", ""),   # its recipe's cache
            *((w, *(float(lay[k]) for k in shape)) for w, lay in sorted(res["workers"].items())))


def resolve(row, load_model, load_hardware) -> dict:
    """What the model needs of one run, or {'reason': ...} saying why it cannot be modelled."""
    if row.get(UNREADABLE):
        return {"reason": f"{row[UNREADABLE]} is not a number"}
    system = SYSTEMS.get(str(row.get("system", "")).strip())
    if system is None:
        return {"reason": f"unknown system '{_cell(row.get('system'))}' (known: {', '.join(SYSTEMS)})"}
    preset, why = model_preset(str(row.get("model_path", "")).strip())
    if preset is None:
        return {"reason": why}
    if row.get("backend") not in BACKENDS:
        return {"reason": f"unknown backend '{_cell(row.get('backend'))}' (known: {', '.join(BACKENDS)})"}
    precision = row.get("precision")
    if isinstance(precision, str) and precision.strip() and precision.strip().lower() not in QUANT:
        return {"reason": f"unknown precision '{precision}' (known: {', '.join(QUANT)})"}
    g, m = _fmt(row.get("gemm_quant_mode"), row.get("precision")), _fmt(row.get("moe_quant_mode"), row.get("precision"))
    if g is None or m is None:
        modes = "'/'".join(_cell(row.get(c)) for c in ("gemm_quant_mode", "moe_quant_mode"))
        return {"reason": f"unknown quant mode '{modes}'"}
    kv = kv_quant(row.get(KV_COLUMN))
    if kv is None:
        return {"reason": f"unknown {KV_COLUMN} '{_cell(row.get(KV_COLUMN))[:40]}' (known: {', '.join(KV_QUANT)})"}
    isl, osl = _num(row.get("isl")), _num(row.get("osl"))
    if not isl or not osl or isl < 1 or osl < 1:
        return {"reason": "isl and osl must be positive token counts"}
    if not (isl.is_integer() and osl.is_integer()) or isl + osl > MAX_CONTEXT:   # inf and 1e308 too
        return {"reason": f"isl and osl must be whole token counts, together at most {MAX_CONTEXT:,} "
                          f"(got isl {number(isl)}, osl {number(osl)})"}
    mode = str(row.get("mode", "")).strip()
    hw = load_hardware(system)
    server = hw.scale_up_size
    if mode == "agg":
        workers = {"agg": layout(row, server=server)}
    elif mode == "disagg":
        workers = {"prefill": layout(row, "prefill_", server), "decode": layout(row, "decode_", server)}
    else:
        return {"reason": f"unknown mode '{mode}' (agg or disagg)"}
    bad = [w for w in workers.values() if isinstance(w, str)]
    if bad:
        return {"reason": bad[0]}
    if hw.scale_up_size is None and max(w["gpus"] for w in workers.values()) > hw.nodes:
        return {"reason": f"layout needs more GPUs than one {system} domain"}
    model = load_model(preset)
    if max(w["pp"] for w in workers.values()) > model.num_hidden_layers:   # a stage holds at least one layer
        return {"reason": f"pp_size above the model's {model.num_hidden_layers} layers"}
    return {"hardware": hw, "model": model, "model_preset": preset, "system_preset": system,
            "backend": row.get("backend"), "version": _cell(row.get("backend_version")),
            "checkpoint": str(row.get("model_path", "")).strip(), "gemm": g, "moe": m, "kv": kv, "isl": isl, "osl": osl, "mode": mode, "workers": workers,
            "harness": harness(row.get("silicon_data_source"))}
