"""The real Hugging Face clients against a TensorFS hub (driven by hf-clients.test.ts).

make OUT            tiny Llama (sharded), tiny GPT-2 and a PEFT adapter made by transformers/peft,
                    saved under OUT/{llama,gpt2,adapter}, with reference outputs in OUT/ref.pt.
check OUT           with HF_ENDPOINT set: snapshot_download, hf_hub_download, a download resumed
                    with Range, from_pretrained (outputs torch.equal to the references) and the
                    errors bad requests raise. Prints one JSON line of results.
load OUT            from_pretrained / snapshot_download only (a pull-through hub, upstream stopped).
"""
import json
import os
import sys
import tempfile

import torch

IDS = torch.tensor([[1, 5, 9, 33, 2, 77, 4, 100]])


def make(out):
    from peft import LoraConfig, get_peft_model
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    llama = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=128,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=64,
        )
    ).eval()
    llama.save_pretrained(f"{out}/llama", max_shard_size="20KB")
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=128, n_embd=32, n_layer=2, n_head=2, n_positions=64)).eval()
    gpt2.save_pretrained(f"{out}/gpt2")
    peft = get_peft_model(
        llama, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    ).eval()
    peft.save_pretrained(f"{out}/adapter")
    with torch.no_grad():
        ref = {
            "llama": LlamaForCausalLM.from_pretrained(f"{out}/llama").eval()(IDS).logits,
            "gpt2": gpt2(IDS).logits,
            "adapter": peft(IDS).logits,
        }
    torch.save(ref, f"{out}/ref.pt")
    print(json.dumps({"shards": sorted(os.listdir(f"{out}/llama"))}))


def files_equal(a, b):
    """Every file under a (the original) is byte-identical under b (the download)."""
    names = []
    for root, _, files in os.walk(a):
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), a)
            with open(os.path.join(a, rel), "rb") as x, open(os.path.join(b, rel), "rb") as y:
                if x.read() != y.read():
                    return f"differs: {rel}"
            names.append(rel)
    return sorted(names)


def load(out, prefix, results):
    from huggingface_hub import snapshot_download
    from peft import PeftModel
    from transformers import GPT2LMHeadModel, LlamaForCausalLM

    ref = torch.load(f"{out}/ref.pt")
    with torch.no_grad():
        results[prefix + "llama_equal"] = torch.equal(
            LlamaForCausalLM.from_pretrained("test/llama").eval()(IDS).logits, ref["llama"]
        )
        results[prefix + "gpt2_equal"] = torch.equal(
            GPT2LMHeadModel.from_pretrained("test/gpt2").eval()(IDS).logits, ref["gpt2"]
        )
        base = LlamaForCausalLM.from_pretrained("test/llama").eval()
        results[prefix + "adapter_equal"] = torch.equal(
            PeftModel.from_pretrained(base, "test/adapter").eval()(IDS).logits, ref["adapter"]
        )
    results[prefix + "snapshot_llama"] = files_equal(f"{out}/llama", snapshot_download("test/llama"))


def check(out):
    import httpx
    from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_download, hf_hub_url
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )
    from huggingface_hub.file_download import http_get

    results = {}
    load(out, "", results)
    from huggingface_hub import snapshot_download

    results["snapshot_adapter"] = files_equal(f"{out}/adapter", snapshot_download("test/adapter"))
    one = hf_hub_download("test/gpt2", "config.json", cache_dir=tempfile.mkdtemp())
    results["one_file"] = open(one, "rb").read() == open(f"{out}/gpt2/config.json", "rb").read()
    results["one_file_alone"] = sorted(os.listdir(os.path.dirname(one)))

    # An interrupted download, resumed with Range by the client's own http_get.
    name = sorted(n for n in os.listdir(f"{out}/llama") if n.endswith(".safetensors"))[0]
    url = hf_hub_url("test/llama", name)
    meta = get_hf_file_metadata(url)
    results["meta"] = {"commit": meta.commit_hash, "etag": meta.etag, "size": meta.size}
    original = open(f"{out}/llama/{name}", "rb").read()
    half = len(original) // 2
    with httpx.stream("GET", url) as r:
        got = b""
        for chunk in r.iter_bytes():
            got += chunk
            if len(got) >= half:
                break
    got = got[:half]
    with tempfile.TemporaryFile() as f:
        f.write(got)
        http_get(url, f, resume_size=half, expected_size=meta.size)
        f.seek(0)
        results["resumed"] = f.read() == original
    r = httpx.get(url, headers={"Range": f"bytes={half}-"})
    results["range"] = [r.status_code, r.headers.get("content-range"), r.content == original[half:]]

    api = HfApi()
    info = api.model_info("test/llama")
    results["info"] = {"id": info.id, "sha": info.sha, "siblings": sorted(s.rfilename for s in info.siblings)}
    results["by_sha"] = open(hf_hub_download("test/llama", "config.json", revision=info.sha), "rb").read() == open(
        f"{out}/llama/config.json", "rb"
    ).read()

    def raises(fn):
        try:
            fn()
            return "ok"
        except Exception as e:  # noqa: BLE001
            return [type(e).__name__, getattr(getattr(e, "response", None), "status_code", None)]

    results["errors"] = {
        "repo": raises(lambda: hf_hub_download("test/nope", "config.json")),
        "revision": raises(lambda: hf_hub_download("test/llama", "config.json", revision="nope")),
        "sha": raises(lambda: hf_hub_download("test/llama", "config.json", revision="0" * 40)),
        "entry": raises(lambda: hf_hub_download("test/llama", "nope.json")),
        "info_revision": raises(lambda: api.model_info("test/llama", revision="nope")),
        "anonymous": raises(lambda: hf_hub_download("private/llama", "config.json")),
        "scope": raises(lambda: hf_hub_download("test/llama", "config.json", token="tok-other-1234", cache_dir=tempfile.mkdtemp())),
        "bad_token": raises(lambda: api.model_info("test/llama", token="not-a-token-at-all")),
    }
    results["error_classes"] = {
        "RepositoryNotFoundError": RepositoryNotFoundError.__name__,
        "GatedRepoError": issubclass(GatedRepoError, RepositoryNotFoundError),
        "RevisionNotFoundError": RevisionNotFoundError.__name__,
        "EntryNotFoundError": EntryNotFoundError.__name__,
    }
    pull = os.environ.get("PULL_ENDPOINT")
    if pull:
        # Through a pull-through hub whose upstream is the hub above: each repository imported on demand.
        results["pulled"] = {
            name: files_equal(f"{out}/{name}", snapshot_download(f"test/{name}", endpoint=pull, cache_dir=tempfile.mkdtemp()))
            for name in ("llama", "gpt2", "adapter")
        }
    print(json.dumps(results))


if __name__ == "__main__":
    cmd, out = sys.argv[1], sys.argv[2]
    if cmd == "make":
        make(out)
    elif cmd == "check":
        check(out)
    elif cmd == "load":
        results = {}
        load(out, "", results)
        print(json.dumps(results))
