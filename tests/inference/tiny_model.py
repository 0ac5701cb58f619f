"""A tiny chat model built in the test, never downloaded: a 2-layer Llama with random weights and a byte-level BPE
tokenizer trained on a few KB of C/CUDA text, with a ChatML chat template set by hand.

vLLM's CPU attention accepts head_dim only in {32, 64, ...} (STACK.md): hidden 64 with 2 heads gives 32. The weights
are random (fixed seed) with a wider initialisation than Llama's default 0.02, so that logits are spread and greedy
decoding has no near-ties that float rounding could flip between two engines. The model is saved as float32
safetensors; vLLM and transformers both load the directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.profiling.conftest import FAST_C

SEED = 1234
VOCAB_SIZE = 2048  # the trainer stops earlier when the corpus has no more pairs to merge
IM_START, IM_END, PAD = "<|im_start|>", "<|im_end|>", "<|endoftext|>"
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

_C_SNIPPETS = [
    """\
/*
 * A performance engineer rewrites one source file so that its kernel runs faster on the target hardware while
 * producing the same outputs. The profile and the diagnosis below were measured: use them. Every rewrite you
 * propose is compiled, checked against the original on fresh random inputs and timed, so keep the interface of
 * the file (function names, signatures, headers) unchanged, and do not call the original or a library that does
 * the whole job. Answer in exactly this form: the hypothesis, one sentence that says what you change and why it
 * removes the bottleneck; the evidence, the diagnosis, counter or hot line that shows the bottleneck; then the
 * whole edited file in one fenced code block.
 *
 * The bottlenecks, most severe first: cache_miss_bound (severity 0.52): walk memory in the order it is laid out
 * (swap loops so the innermost index is contiguous) or block the loops so reused data stays in cache.
 * missing_parallelism (severity 0.40): share the independent iterations of the dominant loop among the cores
 * (#pragma omp parallel for). missed_vectorization: remove what blocks the vectoriser (restrict on
 * non-overlapping pointers, no calls or early exits in the loop, unit-stride accesses). The median time over
 * the trials, with p10 and p90, on the monotonic_clock; D1_miss_rate = 25.05 % (>= 10) at line 5;
 * D1_miss_amplification = 16.01 ratio (>= 4); loop_nest_share = 0.9996 ratio (>= 0.5) at line 3;
 * cpu_cores = 2 core (>= 2); static.openmp_pragmas = 0 pragma (<= 0). Hot lines: line 4 (50.0%) with
 * Ir, Ir_self, data_accesses and D1_misses. The loop nest at line 3 has 100% of the estimated cycles and runs
 * on one of the cores. Earlier attempts, as the pipeline measured them (do not repeat a failure): claimed,
 * measured, counters. The file below is the best proven version so far; improve it further.
 */
""",
    "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n" + FAST_C,
    """\
void matmul(int n, const float *a, const float *b, float *c) {
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++) {
            float aik = a[(long)i * n + k];
            for (int j = 0; j < n; j++)
                c[(long)i * n + j] += aik * b[(long)k * n + j];
        }
}
""",
    """\
static inline int min_int(int x, int y) { return x < y ? x : y; }

void transpose(int rows, int cols, const double *src, double *dst) {
    const int block = 32;
    for (int ii = 0; ii < rows; ii += block)
        for (int jj = 0; jj < cols; jj += block)
            for (int i = ii; i < min_int(ii + block, rows); i++)
                for (int j = jj; j < min_int(jj + block, cols); j++)
                    dst[(size_t)j * rows + i] = src[(size_t)i * cols + j];
}
""",
    """\
#include <cuda_runtime.h>

__global__ void sum_kernel(const float *x, float *out, int n) {
    __shared__ float tile[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) tile[threadIdx.x] += tile[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, tile[0]);
}

void launch_sum(const float *x, float *out, int n) {
    sum_kernel<<<(n + 255) / 256, 256>>>(x, out, n);
    cudaDeviceSynchronize();
}
""",
    """\
__global__ void saxpy(int n, float a, const float *__restrict__ x, float *__restrict__ y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

typedef struct {
    int count;
    size_t bytes;
    unsigned char *data;
} buffer_t;

int buffer_init(buffer_t *b, size_t bytes) {
    b->data = (unsigned char *)malloc(bytes);
    if (b->data == NULL) return -1;
    memset(b->data, 0, bytes);
    b->bytes = bytes;
    b->count = 0;
    return 0;
}
""",
]

_ANSWERS = [
    "Hypothesis: the inner loop walks a column of B with stride n, so every load misses the cache; interchanging "
    "the loops to i-k-j makes it walk a row.\nEvidence: cache_miss_bound, D1 miss rate 0.42 on the hot line.\n",
    "Hypothesis: one global atomicAdd per element serialises the threads; a block reduction in shared memory then "
    "one atomic per block removes the contention.\nEvidence: atomic_contention, stall_lg_throttle on line 5.\n",
    "Hypothesis: the accumulator lives in memory; keeping it in a register removes a load and a store per "
    "iteration.\nEvidence: memory_bound, dram bytes per flop 4.0.\n",
]


def training_text() -> str:
    """A few KB of C and CUDA, and answers in the prompt's format (Hypothesis:, Evidence:, fenced code)."""
    parts = []
    for index, code in enumerate(_C_SNIPPETS):
        parts.append(_ANSWERS[index % len(_ANSWERS)])
        fence = "cuda" if "__global__" in code else "c"
        parts.append(f"```{fence}\n{code}```\n")
    parts.append("Target: cpu (c). File: kernel.c. Kernel: matvec.\nProfile and diagnosis:\n"
                 "Target this bottleneck: cache_miss_bound.\nThe file kernel.c:\n")
    return "\n".join(parts)


def build_tokenizer():  # noqa: ANN201 (a transformers PreTrainedTokenizerFast; imported lazily)
    """A byte-level BPE tokenizer trained on training_text(), with ChatML special tokens and template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    # The full byte alphabet: any prompt (the profile summary may hold non-ASCII text) encodes without loss.
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=[PAD, IM_START, IM_END],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    text = training_text()
    tokenizer.train_from_iterator([text, text.replace("float", "double")], trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token=IM_END, pad_token=PAD, bos_token=None,
                                   chat_template=CHAT_TEMPLATE, model_max_length=2048)


TINY_SHAPE = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
              "num_key_value_heads": 2}


def random_chat_model(tokenizer: Any, shape: dict[str, Any], *, max_positions: int = 2048,
                      initializer_range: float = 0.02) -> Any:
    """A float32 Llama of `shape` with random weights (seed SEED) for `tokenizer`'s vocabulary (unless the shape
    sets vocab_size) and chat tokens: the tests' model, and the benchmarks' larger ones."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    eos, pad = tokenizer.convert_tokens_to_ids(IM_END), tokenizer.convert_tokens_to_ids(PAD)
    config = LlamaConfig(**{"vocab_size": len(tokenizer), **shape}, max_position_embeddings=max_positions,
                         initializer_range=initializer_range, tie_word_embeddings=False, eos_token_id=eos,
                         pad_token_id=pad, bos_token_id=None, dtype="float32")
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(config).to(torch.float32)
    model.generation_config = GenerationConfig(eos_token_id=eos, pad_token_id=pad)
    return model


def save_chat_model(model: Any, tokenizer: Any, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    return directory


def build_tiny_chat_model(directory: Path) -> Path:
    """Write the tiny chat model (config, float32 safetensors, tokenizer with chat template) into `directory`."""
    directory = Path(directory)
    if (directory / "config.json").is_file() and (directory / "tokenizer.json").is_file():
        return directory
    tokenizer = build_tokenizer()
    # a wide initialisation spreads the logits: no near-ties for float rounding to flip (module docstring)
    model = random_chat_model(tokenizer, TINY_SHAPE, initializer_range=0.2).eval()
    return save_chat_model(model, tokenizer, directory)
