"""What each corpus file is, decided independently of the grader.

`fails`: the probes of truth.py the file fails (empty = correct); tests/test_corpus.py checks truth.py agrees, so
this table cannot lie. `mistakes`: the catalog ids the grader must report for it, and the first id it reports must
be one of them, and it may report no other id unless it is listed in `also` (a side effect the file really shows,
with the reason beside it); `advice`: advice ids it must report; `unnamed`: real bugs no catalog id names (they must still cost
points, through the failing probes).
Every file is a reconstruction written here (its first line: `# seen in: <project>: <pattern>`).
"""

ALL: dict[str, dict] = {
    "nanogpt_causal_self_attention": {"fails": [], "mistakes": []},
    "mingpt_causal_self_attention": {"fails": [], "mistakes": []},
    "happyllm_multi_head_attention": {"fails": [], "mistakes": []},
    "cs336_bitkira_rearrange": {"fails": [], "mistakes": []},
    "cs336_ishovkun_einsum": {"fails": [], "mistakes": []},
    "timm_attention": {"fails": [], "mistakes": []},
    "vit_pytorch_attention": {"fails": [], "mistakes": []},
    # correct, but its -9e15 mask fill cannot be converted to float16
    "uvadlc_tutorial6_multihead_attention": {"fails": [], "mistakes": [],
                                             "advice": ["mask-value-overflow"]},
    # keys.transpose(1, 2): right only with exactly one leading dim
    "raschka_causal_attention": {"fails": ["sdpa.lead0", "sdpa.lead2", "sdpa.lead3"],
                                 "mistakes": ["hardcoded-dims"]},
    "nlp_milestones_sdpa": {"fails": ["sdpa.lead0", "sdpa.lead2", "sdpa.lead3"],
                            "mistakes": ["hardcoded-dims"]},
    # torch.bmm (+ transpose(1, 2), Softmax(dim=2)): 3-D tensors only
    "d2l_dot_product_attention": {"fails": ["sdpa.lead0", "sdpa.lead2", "sdpa.lead3"],
                                  "mistakes": ["hardcoded-dims"]},
    "fastspeech_modules_attention": {"fails": ["sdpa.lead0", "sdpa.lead2", "sdpa.lead3"],
                                     "mistakes": ["hardcoded-dims"]},
    # `batch_size ...` einops patterns need a leading dim; seq_len_k vs seq_len_v is not contracted
    "cs336_batch_size_einsum": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead2", "sdpa.lead3"],
                                "mistakes": ["hardcoded-dims"], "unnamed": ["einsum axis names differ"]},
    # a (1, T, T) CPU mask: adds a batch dim to (T, d) input (the catalog's hardcoded-dims names "a mask with its own
    # batch dims" as one of its forms), and never follows the input to a GPU; -1e9 fill
    "annotated_transformer_attention": {"fails": ["sdpa.lead0", "sdpa.device", "mha.device"],
                                        "mistakes": ["hardcoded-dims", "mask-device"],
                                        "advice": ["mask-value-overflow"]},
    # attn_bias and temp_mask created without device=
    "pytorch_docs_sdpa_reference": {"fails": ["sdpa.device"], "mistakes": ["mask-device"]},
    # `not attn_mask` on a whole tensor: every causal call raises (tensor-truth-value)
    "pytorch_docs_2_0_sdpa_reference": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead2", "sdpa.lead3",
                                                  "sdpa.t1", "sdpa.device"],
                                        "mistakes": ["tensor-truth-value"]},
    # d_k = k.dim(): divides by sqrt(number of dims)
    "hands_on_llms_dim_scale": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead2", "sdpa.lead3"],
                                "mistakes": ["wrong-scale"]},
    # value.size(-1) ** 0.5: scales by sqrt(d_v), right only when d_v == d_k
    "hf_gpt2_attention": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead2", "sdpa.lead3"],
                          "mistakes": ["wrong-scale"]},
    # GPT-Neo never scales the scores, in either part
    "hf_gpt_neo_self_attention": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead2", "sdpa.lead3",
                                            "mha.values", "mha.b1", "mha.tmax"],
                                  "mistakes": ["missing-scale"]},
    # softmax(attn_scores, d_k): the key width used as the axis
    "cs336_softmax_over_d_k": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead2", "sdpa.lead3", "sdpa.t1",
                                         "sdpa.device"], "mistakes": ["softmax-dim"]},
    # torch.sqrt on a Python int raises; behind it F.dropout(p, 0.1) always on, and heads never merged
    "slapo_tutorial_attention": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead2", "sdpa.lead3", "sdpa.t1",
                                           "sdpa.device", "mha.values", "mha.b1", "mha.t1", "mha.tmax",
                                           "mha.device", "mha.loop"],
                                 "mistakes": ["sqrt-of-int"],
                                 "unnamed": ["dropout-in-eval and unmerged heads, hidden behind the TypeError"]},
    # `q * dim_head ** 0.5` (multiplies by sqrt(d)), a causal mask without device=, a four-dims-only einsum
    "lucidrains_quartic_attention": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead2", "sdpa.lead3", "sdpa.t1",
                                               "sdpa.device", "mha.values", "mha.b1", "mha.tmax", "mha.device"],
                                     "mistakes": ["hardcoded-dims", "wrong-scale", "mask-device"]},
    # torch.bmm (3-D only); heads scaled by sqrt(d_model); the head-major batch merged as if batch-major
    "jadore_aiayn_2017_attention": {"fails": ["sdpa.lead0", "sdpa.lead2", "sdpa.lead3",
                                              "mha.values", "mha.b1", "mha.t1", "mha.tmax"],
                                    # Part 2 divides by √d_model AND merges head-major rows as batch-major: no
                                    # reference variant reproduces the pair; the graph names the scale (its divisor
                                    # is a number in the graph), the merge stays unnamed (known limit)
                                    "mistakes": ["hardcoded-dims", "wrong-scale"],
                                    "unnamed": ["head-major rows merged as batch-major, beside the wrong scale"]},
    # sequence-first ([T, B, dim]) code fed batch-first input: attends across the batch, never across time; -1e9 fill
    # (read batch-first, each time step's output mixes only the batch's rows at that same step: the catalog's
    # no-attention, "each position's output depends only on V at that same position")
    "labml_mha_sequence_first": {"fails": ["mha.values", "mha.b1", "mha.t1", "mha.tmax"],
                                 "mistakes": ["no-attention"], "advice": ["mask-value-overflow"],
                                 "unnamed": ["sequence-first layout: `seq_len, batch_size, _ = query.shape`"]},
    # one Head module per head in a list comprehension
    "raschka_mha_wrapper": {"fails": ["mha.loop"], "mistakes": ["python-loop"]},
    # Part 1 unpacks `B, T, C = x.shape` (3-D only); Part 2: the lecture's per-head loop with C = dim in the scale
    "gyakobo_heads_loop": {"fails": ["sdpa.lead0", "sdpa.lead2", "sdpa.lead3", "mha.values", "mha.b1", "mha.tmax",
                                     "mha.loop"],
                           "mistakes": ["hardcoded-dims", "wrong-scale", "python-loop"]},
    # per-head loop, and each head scaled by C**-0.5 with C = dim, not the head size
    "ng_video_lecture_heads": {"fails": ["mha.values", "mha.b1", "mha.tmax", "mha.loop"],
                               "mistakes": ["wrong-scale", "python-loop"]},
    # transpose(2, 3) (4-D only) and a (1, 1, T, T) mask in Part 1; Part 2, llama2.c's module, is right
    "llama2c_attention": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead3", "sdpa.t1", "sdpa.device"],
                          "mistakes": ["hardcoded-dims"]},
    # T5 never divides by sqrt(d_k) (its init absorbs it); Part 1's transpose(3, 2) is 4-D only
    "hf_t5_attention": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead2", "sdpa.lead3", "sdpa.t1", "sdpa.device",
                                  "mha.values", "mha.b1", "mha.tmax"],
                        "mistakes": ["missing-scale", "hardcoded-dims"]},
    # correct: scores in float32, finfo.min through torch.where before the scale, a 0-dim CPU scale tensor
    "hf_gptj_attention": {"fails": [], "mistakes": []},
    # Part 1: transpose(2, 3) (4-D only) and a (1, 1, T, T) mask; -1e18 filled after `.float()`, so never in float16
    "opennmt_multi_headed_attn": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead3", "sdpa.t1", "sdpa.device"],
                                  "mistakes": ["hardcoded-dims"]},
    # correct: an additive float mask from log(tril(ones)) built with device=, softmax(dtype=torch.float32)
    "fairseq2_naive_sdpa": {"fails": [], "mistakes": []},
    # einsum 'b h i d, b h j d -> b h i j' without `...` (4-D only; 3-D keys read as 'b j d'); Part 2 right
    "x_transformers_attend": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead3", "sdpa.t1", "sdpa.device"],
                              "mistakes": ["hardcoded-dims"]},
    # Part 1: `att = dropout_module(dropout)` calls the dropout on the rate (None), not on the weights: every call
    # raises (behind it, their (1, 1, T, T) mask would add two dims to any input); Part 2 (nanoGPT style) is right
    "tiny_universe_dropout_typo": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead2", "sdpa.lead3", "sdpa.t1",
                                             "sdpa.device"],
                                   "mistakes": [],
                                   "unnamed": ["`att = dropout_module(dropout)`: the weights replaced by a call on "
                                               "the dropout rate"]},
    # `attn_scores / keys.shape[-1]**-0.5`: divides by 1/sqrt(d), so the scores are multiplied by sqrt(d) (a notebook
    # typo later corrected upstream), in both parts
    "raschka_combined_qkv_inverse_scale": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead2", "sdpa.lead3",
                                                     "mha.values", "mha.b1", "mha.tmax"],
                                           "mistakes": ["wrong-scale"]},
    # BERT as a decoder: an additive (1 - mask) * -10000.0 bias from an arange comparison, heads by permute; right
    # (exp(-10000) is exactly 0 in float32 and float64, and -10000 fits in float16)
    "hf_bert_decoder_self_attention": {"fails": [], "mistakes": []},
    # CTRL: k.permute(0, 1, 3, 2) in Part 1 (4-D only); its additive triu * -1e4 mask is right (exp(-1e4) is exactly 0
    # in float32 and float64, and -1e4 fits in float16); Part 2, CTRL's module (reshape/permute heads), is right
    "hf_ctrl_attention": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead3", "sdpa.t1", "sdpa.device"],
                          "mistakes": ["hardcoded-dims"]},
    # `n_head` where `self.n_head` was stored: a NameError on every forward call, which no catalog id names; the part
    # scores 0, and its layout check, which held, says it is not counted (tests/checks/test_named_bug_classes.py);
    # behind the crash (`n_head` mended as `self.n_head` and regraded) resid_dropout is never called
    "undefined_name_in_forward": {"fails": ["mha.values", "mha.b1", "mha.t1", "mha.tmax", "mha.device", "mha.loop"],
                                  "mistakes": ["dropout-not-applied"],
                                  "unnamed": ["NameError: name 'n_head' is not defined"]},
    # issue 43: honest operators the graph runner once refused (`unsupported-op`); each is correct, full marks
    "index_list_triu_indices_mask": {"fails": [], "mistakes": []},  # triu_indices / tril_indices, index_put_
    "inplace_masked_writes_on_scores": {"fails": [], "mistakes": []},  # masked_fill_, a boolean-mask assignment
    "fairseq_resized_future_mask": {"fails": [], "mistakes": []},  # resize_ on a cached mask, fill_, triu
    "logical_or_mask_merge": {"fails": [], "mistakes": []},  # logical_or_ / logical_or merging two masks
    "scalenorm_style_l1_softmax": {"fails": [], "mistakes": []},  # linalg_vector_norm(ord=1) as the sum, amax
    # issue 43: a LayerNorm inside the module (native_layer_norm, once `unsupported-op`): the operator is graded, and
    # the norm changes the output, a value mistake no catalog id names (Part 1 is right in both)
    "vit_pytorch_prenorm_layer_norm": {"fails": ["mha.values", "mha.b1", "mha.t1", "mha.tmax"], "mistakes": [],
                                       "unnamed": ["the block's pre-norm applied to q, k and v inside the module"]},
    "jadore_aiayn_residual_layer_norm": {"fails": ["mha.values", "mha.b1", "mha.t1", "mha.tmax"], "mistakes": [],
                                         "unnamed": ["the residual and a LayerNorm applied after wo, inside the "
                                                     "module"]},
}

EXPECTED = ALL
