// The kai inference runtime: everything a caller needs.
//   llm_config.h  CFG.BIN/LTY.BIN parsing and validation
//   llm_model.h   BundleSource, MemoryBundle, Model (zero-copy weights)
//   llm_session.h Session (KV cache, DeltaNet states), check_request
//   llm_batch.h   Batch: one forward pass over many tokens of many sessions
//   matvec.h      matrix-vector kernels (float, int8 activations)
//   llm_math.h    exp/log/sqrt and vector helpers without libm
//   llm_tokenizer.h  text <-> token ids with a bundle's TOK.BIN
//   llm_sample.h  next-token choice: greedy or sampled (temperature, top-k/p, min-p, penalty)
//   llm_stop.h    when generation ends: end of sequence, stop sequences, length
#pragma once
#include "llm_batch.h"
#include "llm_config.h"
#include "llm_error.h"
#include "llm_math.h"
#include "llm_model.h"
#include "llm_sample.h"
#include "llm_session.h"
#include "llm_stop.h"
#include "llm_tokenizer.h"
#include "matvec.h"
