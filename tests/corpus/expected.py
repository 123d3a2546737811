"""What each corpus file is, decided independently of the grader.

`fails`: the probes of truth.py the file fails (empty = correct); tests/test_corpus.py checks truth.py agrees, so
this table cannot lie. `mistakes`: the catalog ids the grader must report for it; `advice`: advice ids it must
report; `unnamed`: real bugs no catalog id names (they must still cost points, through the failing probes).
"""

EXPECTED: dict[str, dict] = {
    "nanogpt_causal_self_attention": {"fails": [], "mistakes": []},
    "mingpt_causal_self_attention": {"fails": [], "mistakes": []},
    "happyllm_multi_head_attention": {"fails": [], "mistakes": []},
    "cs336_bitkira_rearrange": {"fails": [], "mistakes": []},
    "cs336_ishovkun_einsum": {"fails": [], "mistakes": []},
    # keys.transpose(1, 2): right only with exactly one leading dim
    "raschka_causal_attention": {"fails": ["sdpa.lead0", "sdpa.lead2", "sdpa.lead3"], "mistakes": ["hardcoded-dims"]},
    "nlp_milestones_sdpa": {"fails": ["sdpa.lead0", "sdpa.lead2", "sdpa.lead3"], "mistakes": ["hardcoded-dims"]},
    # torch.bmm (+ transpose(1, 2), Softmax(dim=2)): 3-D tensors only
    "d2l_dot_product_attention": {"fails": ["sdpa.lead0", "sdpa.lead2", "sdpa.lead3"], "mistakes": ["hardcoded-dims"]},
    "fastspeech_modules_attention": {"fails": ["sdpa.lead0", "sdpa.lead2", "sdpa.lead3"],
                                     "mistakes": ["hardcoded-dims"]},
    # `batch_size ...` einops patterns need a leading dim; seq_len_k vs seq_len_v is not contracted
    "cs336_batch_size_einsum": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead2", "sdpa.lead3"],
                                "mistakes": ["hardcoded-dims"], "unnamed": ["einsum axis names differ"]},
    # a (1, T, T) CPU mask: adds a batch dim to (T, d) input, and never follows the input to a GPU; -1e9 fill
    "annotated_transformer_attention": {"fails": ["sdpa.lead0", "sdpa.device", "mha.device"],
                                        "mistakes": ["wrong-return", "mask-device"],
                                        "advice": ["mask-value-overflow"]},
    # attn_bias and temp_mask created without device=
    "pytorch_docs_sdpa_reference": {"fails": ["sdpa.device"], "mistakes": ["mask-device"]},
    # `not attn_mask` on a whole tensor: every causal call raises
    "pytorch_docs_2_0_sdpa_reference": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead2", "sdpa.lead3",
                                                  "sdpa.t1", "sdpa.device"],
                                        "mistakes": [], "unnamed": ["`not tensor` in masked_fill"]},
    # d_k = k.dim(): divides by sqrt(number of dims)
    "hands_on_llms_dim_scale": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead2", "sdpa.lead3"],
                                "mistakes": ["wrong-scale"]},
    # softmax(attn_scores, d_k): the key width used as the axis
    "cs336_softmax_over_d_k": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead2", "sdpa.lead3", "sdpa.t1",
                                         "sdpa.device"], "mistakes": ["softmax-dim"]},
    # torch.sqrt on a Python int raises; behind it F.dropout(p, 0.1) always on, and heads never merged
    "slapo_tutorial_attention": {"fails": ["sdpa.lead0", "sdpa.lead1", "sdpa.lead2", "sdpa.lead3", "sdpa.t1",
                                           "sdpa.device", "mha.values", "mha.b1", "mha.t1", "mha.tmax",
                                           "mha.device", "mha.loop"],
                                 "mistakes": ["sqrt-of-int"],
                                 "unnamed": ["dropout-in-eval and unmerged heads, hidden behind the TypeError"]},
    # one Head module per head in a list comprehension
    "raschka_mha_wrapper": {"fails": ["mha.loop"], "mistakes": ["python-loop"]},
    # per-head loop, and each head scaled by C**-0.5 with C = dim, not the head size
    "ng_video_lecture_heads": {"fails": ["mha.values", "mha.b1", "mha.tmax", "mha.loop"],
                               "mistakes": ["wrong-scale", "python-loop"]},
}
