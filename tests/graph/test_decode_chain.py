"""The decode chain of the kv_cache lab, both sides of the real code in this process: the worker's decode probe
(grader/sandbox/decode_probes.py, recording each step with the grader's own KVCache) and the judge's chain
(grader/graph/decode_chain.py, each step's graph run on the parent's inputs and weights, caches from zeros, each step's
caches and module state fed to the next). The chain is held to a full causal pass computed here in float64. These
are the findings of the prototype that preceded them (which holes a stateful decode leaves open), kept as tests.
"""
import math

import pytest
import torch

from support.paths import ROOT
from grader.graph import answers, decode, decode_chain, run
from grader.sandbox import graph_probes, probes, tracing

pytestmark = pytest.mark.unit

SOLUTION = (ROOT / "tests" / "support" / "kv_cache_solution.py").read_text(encoding="utf-8")
ARGS = {"dim": 24, "n_heads": 6, "n_kv_heads": 2, "max_seq_len": 16, "max_batch_size": 3}
BATCH = 2
PROMPT_THEN_TOKENS = [[0, 0, 5], [0, 5, 1], [0, 6, 1], [0, 7, 1]]
PROMPT_THEN_CHUNK = [[0, 0, 4], [0, 4, 3], [0, 7, 1]]
TWO_SEQUENCES_INTERLEAVED = [[0, 0, 4], [1, 0, 6], [0, 4, 1], [1, 6, 1], [0, 5, 2]]
PARENT_SEED = 90210  # the parent's is drawn per grading and never sent


def edited(text: str, old: str, new: str) -> str:
    assert text.count(old) >= 1, old  # a mutant that changes nothing would pass for the solution
    return text.replace(old, new)


def full_causal_pass(x: torch.Tensor, weights: dict, n_heads: int, n_kv_heads: int) -> torch.Tensor:
    """Grouped-query attention over all positions at once, in float64: query head h reads key head h // n_rep."""
    x = x.double()
    B, T, dim = x.shape
    d = dim // n_heads
    q = (x @ weights["wq"].double().T).view(B, T, n_heads, d).transpose(1, 2)
    k = (x @ weights["wk"].double().T).view(B, T, n_kv_heads, d).transpose(1, 2)
    v = (x @ weights["wv"].double().T).view(B, T, n_kv_heads, d).transpose(1, 2)
    k, v = (t.repeat_interleave(n_heads // n_kv_heads, dim=1) for t in (k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), -math.inf)
    y = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, T, dim)
    return y @ weights["wo"].double().T


def parents_inputs(steps: list) -> tuple[dict, dict[int, torch.Tensor]]:
    """Weights and one whole input per sequence, from the parent's seed (none of it reaches the worker)."""
    generator = torch.Generator().manual_seed(PARENT_SEED)
    dim, heads, kv_heads = ARGS["dim"], ARGS["n_heads"], ARGS["n_kv_heads"]
    d = dim // heads
    shapes = {"wq": (heads * d, dim), "wk": (kv_heads * d, dim), "wv": (kv_heads * d, dim), "wo": (dim, heads * d)}
    weights = {name: torch.randn(shape, generator=generator) / math.sqrt(dim) for name, shape in shapes.items()}
    lengths = {}
    for sequence, start_pos, length in steps:
        lengths[sequence] = max(lengths.get(sequence, 0), start_pos + length)
    return weights, {n: torch.randn(BATCH, length, dim, generator=generator) for n, length in lengths.items()}


class ChainBroken(Exception):
    """A step failed, in the worker or on the parent's inputs: its error's type and message."""


def chained(text: str, steps: list) -> list[torch.Tensor]:
    """Each step's output: the worker's probe on decoys (other values of the same shapes), then the judge's chain on
    the parent's own x's and weights."""
    namespace: dict = {}
    exec(compile(text, probes.SUBMISSION_FILE, "exec"), namespace)
    weights, whole = parents_inputs(steps)
    xs = [whole[sequence][:, start:start + length] for sequence, start, length in steps]
    decoys = torch.Generator().manual_seed(11)
    traced = graph_probes.PROBES["gqa_decode"](
        namespace, text.splitlines(), args=ARGS, steps=steps, xs=[torch.randn(x.shape, generator=decoys) for x in xs],
        weights={name: torch.randn(w.shape, generator=decoys) for name, w in weights.items()})
    fields = {"args": ARGS, "steps": steps, "xs": xs, "weights": weights, "count_ops": False, "device": "cpu"}
    answer = decode_chain.decode_steps(traced, fields, answers.Findings())  # the fields as DecodeRequest has them
    if "error" in answer:
        raise ChainBroken(f"{answer['error']['type']}: {answer['error']['message']}")
    for step, result in zip(steps, answer["steps"]):
        if "error" in result:
            raise ChainBroken(f"step {step}: {result['error']['type']}: {result['error']['message']}")
    return [result["out"] for result in answer["steps"]]


def matches(text: str, steps: list) -> bool:
    weights, whole = parents_inputs(steps)
    full = {n: full_causal_pass(x, weights, ARGS["n_heads"], ARGS["n_kv_heads"]) for n, x in whole.items()}
    return all(torch.allclose(out.double(), full[sequence][:, start:start + length], rtol=1e-4, atol=1e-5)
               for (sequence, start, length), out in zip(steps, chained(text, steps)))


SQUARE_CASE_GIVEN = edited(SOLUTION, "        future = torch.ones(T, S, dtype=torch.bool, device=x.device).triu(start_pos + 1)",
                           "        if start_pos == 0:  # the prompt: lab 1's square mask\n"
                           "            future = torch.ones(T, T, device=x.device).triu(1) == 1\n"
                           "        else:\n"
                           "            future = torch.ones(T, S, dtype=torch.bool, device=x.device).triu(start_pos + 1)")
BUFFERS_WRITTEN_BY_HAND = edited(SOLUTION, "            k, v = cache.update(start_pos, k, v)",
                                 "            cache.cache_k[:B, :, start_pos:start_pos + T] = k\n"
                                 "            cache.cache_v[:B, :, start_pos:start_pos + T] = v\n"
                                 "            k, v = cache.cache_k[:B, :, :start_pos + T], cache.cache_v[:B, :, :start_pos + T]")
HONEST = {"cache.update": SOLUTION, "a branch on start_pos == 0": SQUARE_CASE_GIVEN,
          "the cache's buffers written by hand": BUFFERS_WRITTEN_BY_HAND}

UPDATED_AT_ZERO = edited(SOLUTION, "cache.update(start_pos, k, v)", "cache.update(0, k, v)")
MASK_NOT_OFFSET = edited(SOLUTION, ".triu(start_pos + 1)", ".triu(1)")
SQUARE_MASK_ALWAYS = edited(SOLUTION, "torch.ones(T, S, dtype=torch.bool, device=x.device).triu(start_pos + 1)",
                            "torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)")


def test_a_write_in_place_into_an_input_comes_back_as_the_graphs_output():
    """The recorder records `cache[:B, :, s:s+T] = k` as slice views and `copy_` into the input, and the cache
    after the call as the input's own node; the runner writes into its copy of the input and returns it (cache in,
    cache out), the caller's tensor untouched."""
    def update(k, cache_k):
        cache_k[:k.shape[0], :, 2:2 + k.shape[2]] = k
        return [cache_k[:k.shape[0], :, :2 + k.shape[2]], cache_k]

    text, constants = tracing.encode(tracing.trace(update, [torch.randn(1, 2, 3, 4), torch.zeros(2, 2, 8, 4)]))
    graph = decode.decode(bytes(text.numpy().tobytes()), len(constants))
    assert [node.target for node in graph.nodes if node.kind == "call"].count("aten.copy_.default") == 1
    assert decode.verdicts(graph) == {"forbidden": set(), "unsupported": set()}
    assert graph.nodes[-1].args[1].node == 1  # the cache out is the cache in, written
    k, cache_in = torch.randn(1, 2, 3, 4), torch.randn(2, 2, 8, 4)
    kept = cache_in.clone()
    (seen, cache_out), _ = run.run(graph, [k, cache_in], constants)
    wanted = kept.clone()
    wanted[:1, :, 2:5] = k
    assert torch.equal(cache_out, wanted) and torch.equal(seen, wanted[:1, :, :5]) and torch.equal(cache_in, kept)


@pytest.mark.parametrize("style", HONEST)
@pytest.mark.parametrize("steps", [PROMPT_THEN_TOKENS, PROMPT_THEN_CHUNK, TWO_SEQUENCES_INTERLEAVED],
                         ids=["prompt then tokens", "prompt then a chunk", "two sequences interleaved"])
def test_an_honest_decode_chained_on_the_parents_inputs_is_the_full_causal_pass(style, steps):
    assert matches(HONEST[style], steps)


@pytest.mark.parametrize("mutant", [UPDATED_AT_ZERO, MASK_NOT_OFFSET],
                         ids=["cache updated at position 0", "mask not offset by start_pos"])
def test_a_wrong_cache_position_or_mask_offset_shows_in_the_chain(mutant):
    assert not matches(mutant, PROMPT_THEN_TOKENS)
    assert not matches(mutant, PROMPT_THEN_CHUNK)


def test_a_square_mask_shows_only_when_a_chunk_follows_the_prompt():
    """A (T, T) mask broadcast over the cached keys masks nothing for one token: only a chunk tells it (there the
    mask meets T + start_pos keys and the code raises)."""
    assert matches(SQUARE_MASK_ALWAYS, PROMPT_THEN_TOKENS)
    with pytest.raises(ChainBroken, match="must match the size"):
        matches(SQUARE_MASK_ALWAYS, PROMPT_THEN_CHUNK)


FIRST_CALL_ONLY = edited(edited(SOLUTION, "        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)",
                                "        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)\n"
                                "        self.register_buffer('calls', torch.zeros(()))"),
                         "        return self.wo(y)",
                         "        out = torch.where(self.calls == 0, self.wo(y), torch.zeros_like(x))\n"
                         "        self.calls += 1\n"
                         "        return out")


def test_a_buffer_the_code_writes_is_fed_to_the_next_step():
    """Right at the first call only, told by a buffer written in place: the judge feeds the buffer each step left
    to the next, so the second step is the zeros it gives (a chain that started every step from the module's first
    state would see the first call again and again, and pass it)."""
    outs = chained(FIRST_CALL_ONLY, PROMPT_THEN_TOKENS)
    assert bool(outs[0].abs().sum() > 0) and all(torch.equal(out, torch.zeros_like(out)) for out in outs[1:])


KEYS_ON_THE_MODULE = edited(SOLUTION, "            k, v = cache.update(start_pos, k, v)",
                            "            if start_pos == 0:\n"
                            "                self.kept = (k, v)\n"
                            "            else:\n"
                            "                self.kept = tuple(torch.cat([old, new], dim=2) for old, new in zip(self.kept, (k, v)))\n"
                            "            k, v = self.kept")
POSITIONS_COUNTED = edited(SOLUTION, "        B, T, _ = x.shape  # batch, new positions, model width",
                           "        B, T, _ = x.shape\n"
                           "        start_pos = getattr(self, 'position', 0)\n"
                           "        self.position = start_pos + T")


def test_keys_kept_on_the_module_are_constants_wrong_on_the_parents_inputs():
    """Keys kept outside the cache reach the next step's graph as constants: the worker's decoys' keys."""
    assert not matches(KEYS_ON_THE_MODULE, PROMPT_THEN_TOKENS)


def test_positions_counted_on_the_module_show_when_two_sequences_interleave():
    """A Python counter in place of start_pos is baked into each step's graph as the worker's sequence ran it: one
    sequence from a fresh module cannot tell it from start_pos, two sequences on one module can."""
    assert matches(POSITIONS_COUNTED, PROMPT_THEN_TOKENS)
    assert not matches(POSITIONS_COUNTED, TWO_SEQUENCES_INTERLEAVED)


def test_a_step_that_gives_back_a_cache_of_another_shape_breaks_the_chain():
    grown = edited(SOLUTION, "            k, v = cache.update(start_pos, k, v)",
                   "            k, v = cache.update(start_pos, k, v)\n"
                   "            cache.cache_k = torch.cat([cache.cache_k, cache.cache_k[:, :, :1]], dim=2)")
    with pytest.raises(ChainBroken, match="StateChanged"):
        matches(grown, PROMPT_THEN_TOKENS)


@pytest.mark.parametrize("alias", ["self.cache_k", "self.cache_k[:]"], ids=["the same tensor", "an overlapping view"])
def test_a_cache_whose_keys_and_values_share_memory_is_refused_before_its_step_is_traced(alias):
    """Keys and values left in one memory by the module: the judge would run them on two copies, apart, and find
    the code right. The next step is refused where the memory is seen, in the worker (only the code's own grade
    rests on it)."""
    shared = edited(SOLUTION, "            k, v = cache.update(start_pos, k, v)",
                    "            k, v = cache.update(start_pos, k, v)\n"
                    f"            cache.cache_v = {alias.replace('self.', 'cache.')}")
    with pytest.raises(ChainBroken, match="SharedState: cache_k and cache_v share memory"):
        matches(shared, PROMPT_THEN_TOKENS)


CACHE_KEPT_ON_THE_MODULE = edited(SOLUTION, "        if cache is not None:\n",
                                  "        if cache is not None:\n"
                                  "            self.own = getattr(self, 'own', cache)\n"
                                  "            cache = self.own\n")


def test_a_cache_object_kept_on_the_module_shows_when_two_sequences_interleave():
    """The first cache kept and the one passed ignored: the same object at every step of one sequence, so only a
    second sequence on the same module tells it."""
    assert matches(CACHE_KEPT_ON_THE_MODULE, PROMPT_THEN_TOKENS)
    assert not matches(CACHE_KEPT_ON_THE_MODULE, TWO_SEQUENCES_INTERLEAVED)


def test_gradients_through_a_prompt_pass_that_writes_the_cache_are_the_full_passs():
    """In training, k (which needs grad) is copied into a cache that does not: the recorder takes the backward's
    operators into the same graph, and the parent's run gives the float64 reference's gradients for x and the four
    projections. The cache must not be among the inputs that gradients are taken for (a view of a leaf that needs
    grad cannot be written in place)."""
    namespace: dict = {}
    exec(compile(SOLUTION, probes.SUBMISSION_FILE, "exec"), namespace)
    lines = SOLUTION.splitlines()
    module = namespace["GroupedQueryAttention"](namespace["ModelArgs"](**ARGS))
    names = [name for name, _ in module.named_parameters()]
    cache = namespace["KVCache"](3, ARGS["max_seq_len"], ARGS["n_kv_heads"], ARGS["dim"] // ARGS["n_heads"])

    def prompt(x, wq, wk, wv, wo, cache_k, cache_v):
        cache.cache_k, cache.cache_v = cache_k, cache_v
        return [torch.func.functional_call(module, dict(zip(names, (wq, wk, wv, wo))), (x,), {"cache": cache})]

    seen = {}
    joint = graph_probes._joint(prompt, 5, True, seen)
    state = [p.detach() for p in module.parameters()]
    recorded = graph_probes._recorded(joint, [torch.randn(BATCH, 5, ARGS["dim"]), *state, cache.cache_k, cache.cache_v,
                                              torch.randn(BATCH, 5, ARGS["dim"])], 1, "cpu", lines, [])
    assert seen["grads"] == [True] * 5
    weights, whole = parents_inputs([[0, 0, 5]])
    cotangent = torch.randn(BATCH, 5, ARGS["dim"], generator=torch.Generator().manual_seed(PARENT_SEED + 1))
    empty = torch.zeros(3, ARGS["n_kv_heads"], ARGS["max_seq_len"], ARGS["dim"] // ARGS["n_heads"])
    outputs, _, error = answers.evaluate(recorded, [whole[0], *(weights[n.split(".")[0]] for n in names), empty, empty.clone(),
                                                    cotangent], answers.Findings())
    assert error is None
    leaves = [whole[0].double().requires_grad_(True), *(weights[n.split(".")[0]].double().requires_grad_(True) for n in names)]
    full = full_causal_pass(leaves[0], {n.split(".")[0]: leaf for n, leaf in zip(names, leaves[1:])}, ARGS["n_heads"],
                            ARGS["n_kv_heads"])
    wanted = torch.autograd.grad(full, leaves, cotangent.double())
    torch.testing.assert_close(outputs[0].double(), full.detach(), rtol=1e-4, atol=1e-5)
    for got, expected in zip(outputs[1:], wanted, strict=True):
        torch.testing.assert_close(got.double(), expected, rtol=1e-3, atol=1e-4)


PLACED_BY_WHAT_THE_CACHE_HOLDS = edited(SOLUTION, "            k, v = cache.update(start_pos, k, v)",
                                        "            start_pos = int((cache.cache_k[0, 0].abs().sum(-1) != 0).sum())\n"
                                        "            k, v = cache.update(start_pos, k, v)")


def test_a_write_placed_by_what_the_cache_holds_is_judged_where_a_position_is_written_again():
    """The position counted from the cache's values (the count goes to Python): the graph holds the count the
    worker's cache gave. The step is replayed on other x and cache values that keep the cache's unwritten zeros (other
    reachable caches: grader/sandbox/replay.py), where the count is the same, so the graph stands for the code: right
    while each step writes past the last, wrong where a step writes an earlier position again (a token generated
    again), where the count is not the start."""
    assert matches(PLACED_BY_WHAT_THE_CACHE_HOLDS, PROMPT_THEN_TOKENS)
    assert not matches(PLACED_BY_WHAT_THE_CACHE_HOLDS, PROMPT_THEN_TOKENS + [[0, 6, 1]])


OWN_CACHE_IN_BUFFERS = edited(edited(SOLUTION,
                                     "        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)",
                                     "        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)\n"
                                     "        self.own = KVCache(args.max_batch_size, args.max_seq_len, args.n_kv_heads, self.head_dim)\n"
                                     "        self.register_buffer('own_k', self.own.cache_k)\n"
                                     "        self.register_buffer('own_v', self.own.cache_v)"),
                              "            k, v = cache.update(start_pos, k, v)",
                              "            self.own.cache_k, self.own.cache_v = self.own_k, self.own_v\n"
                              "            k, v = self.own.update(start_pos, k, v)")


def test_a_cache_of_the_modules_own_buffers_is_threaded_and_shows_when_two_sequences_interleave():
    """The cache handed in ignored for one the module keeps in buffers: the judge threads the buffers as it threads
    every module state, so one sequence decodes right, and a second sequence on the same module overwrites the
    first's keys, as it would in real use."""
    assert matches(OWN_CACHE_IN_BUFFERS, PROMPT_THEN_TOKENS)
    assert not matches(OWN_CACHE_IN_BUFFERS, TWO_SEQUENCES_INTERLEAVED)
