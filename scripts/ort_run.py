"""Runs an ONNX model in onnxruntime (the test oracle for pixelgrad's ONNX export).

Usage: python scripts/ort_run.py MODEL.onnx OUT_DIR NAME=INPUT.npy [NAME=INPUT.npy ...]
Writes OUT_DIR/output_K.npy for each graph output, in graph order.
"""
import os
import sys

import numpy as np
import onnxruntime as ort

ort.set_default_logger_severity(3)
model, out_dir, *feeds = sys.argv[1:]
so = ort.SessionOptions()
# exact 8-bit products on x86 CPUs without VNNI too (scripts/onnx_fixtures.py `oracle_options`)
so.add_session_config_entry("session.x64quantprecision", "1")
sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
inputs = {k: np.load(v) for k, v in (f.split("=", 1) for f in feeds)}
os.makedirs(out_dir, exist_ok=True)
for k, v in enumerate(sess.run(None, inputs)):
    np.save(os.path.join(out_dir, f"output_{k}.npy"), np.asarray(v, order="C"))
