#!/usr/bin/python3
"""Write a random-weight llama model as GGUF, for benchmarking llama-server.

The weights are meaningless (seeded normal noise); only the shape matters for
speed. Tokenizer metadata is copied from the vocab-only GGUF that ships with
llama.cpp, with its BYTE tokens relabelled NORMAL so that random output is
always valid UTF-8. Uses the gguf-py package that build-llama.sh keeps in the
cache; needs numpy (Debian: python3-numpy).

Prints the model path as the last line of stdout. An existing file is reused
unless --force is given.
"""
import argparse
import os
import sys
import tempfile
import time

PKG_VERSION = "3.21.1"


def default_llama_dir():
    root = os.environ.get("SERVEBENCH_CACHE")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(xdg, "servebench")
    return os.path.join(root, f"llama-{PKG_VERSION}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llama-dir", default=default_llama_dir(),
                    help="cache dir written by build-llama.sh (default: %(default)s)")
    ap.add_argument("--out", help="output file (default: <llama-dir>/model-<dim>x<layers>.gguf)")
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--ff", type=int, default=2048)
    ap.add_argument("--ctx", type=int, default=4096, help="trained context length")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--force", action="store_true", help="rewrite even if the file exists")
    args = ap.parse_args()

    out = args.out or os.path.join(args.llama_dir, f"model-{args.dim}x{args.layers}.gguf")
    if os.path.exists(out) and not args.force:
        print(out)
        return 0

    gguf_py = os.path.join(args.llama_dir, "gguf-py")
    vocab_path = os.path.join(args.llama_dir, "ggml-vocab-llama-spm.gguf")
    for p in (gguf_py, vocab_path):
        if not os.path.exists(p):
            sys.exit(f"make-model: {p} is missing; run llama/build-llama.sh first")
    try:
        import numpy as np
    except ImportError:
        sys.exit("make-model: numpy is missing (Debian: apt-get install python3-numpy; "
                 "run with /usr/bin/python3)")
    sys.path.insert(0, gguf_py)
    import gguf
    from gguf import GGUFValueType as VT

    if args.dim % args.heads or args.heads % args.kv_heads:
        sys.exit("make-model: dim must be divisible by heads, heads by kv-heads")
    head_dim = args.dim // args.heads
    kv_dim = head_dim * args.kv_heads

    t0 = time.monotonic()
    vocab = gguf.GGUFReader(vocab_path)
    tok_fields = {k: f for k, f in vocab.fields.items() if k.startswith("tokenizer.")}
    n_vocab = len(tok_fields["tokenizer.ggml.tokens"].contents())

    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".model-", suffix=".gguf.tmp",
                               dir=os.path.dirname(os.path.abspath(out)))
    os.close(fd)
    try:
        w = gguf.GGUFWriter(tmp, "llama")
        w.add_name(f"servebench-random-{args.dim}x{args.layers}")
        w.add_context_length(args.ctx)
        w.add_embedding_length(args.dim)
        w.add_block_count(args.layers)
        w.add_feed_forward_length(args.ff)
        w.add_head_count(args.heads)
        w.add_head_count_kv(args.kv_heads)
        w.add_layer_norm_rms_eps(1e-5)
        w.add_rope_dimension_count(head_dim)
        w.add_rope_freq_base(10000.0)
        w.add_vocab_size(n_vocab)
        w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)

        # Tokenizer: copy every tokenizer.* key with its original types.
        for key, f in tok_fields.items():
            val = f.contents()
            if key == "tokenizer.ggml.token_type":
                # BYTE (6) -> NORMAL (1): otherwise random sampling emits lone
                # bytes and streams end with invalid-UTF-8 errors.
                val = [1 if t == 6 else t for t in val]
            if f.types[0] == VT.ARRAY:
                w.add_key_value(key, val, VT.ARRAY, sub_type=f.types[-1])
            else:
                w.add_key_value(key, val, f.types[0])

        rng = np.random.default_rng(args.seed)

        def rand(*shape):
            # numpy shape is (rows, cols) = reversed GGUF ne.
            return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16)

        ones = lambda n: np.ones(n, dtype=np.float32)
        D, F = args.dim, args.ff
        w.add_tensor("token_embd.weight", rand(n_vocab, D))  # tied: no output.weight
        for i in range(args.layers):
            b = f"blk.{i}."
            w.add_tensor(b + "attn_norm.weight", ones(D))
            w.add_tensor(b + "attn_q.weight", rand(D, D))
            w.add_tensor(b + "attn_k.weight", rand(kv_dim, D))
            w.add_tensor(b + "attn_v.weight", rand(kv_dim, D))
            w.add_tensor(b + "attn_output.weight", rand(D, D))
            w.add_tensor(b + "ffn_norm.weight", ones(D))
            w.add_tensor(b + "ffn_gate.weight", rand(F, D))
            w.add_tensor(b + "ffn_up.weight", rand(F, D))
            w.add_tensor(b + "ffn_down.weight", rand(D, F))
        w.add_tensor("output_norm.weight", ones(D))

        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    print(f"make-model: wrote {out} ({os.path.getsize(out) / 1e6:.0f} MB) "
          f"in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
