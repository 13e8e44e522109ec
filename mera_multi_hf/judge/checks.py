"""The judge a run or `score` names, checked before any work (pipeline/preflight.py
times it): a served judge answers, accepts the key and names its separator; a local
judge's files are at hand."""

from __future__ import annotations

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.foreign_text import foreign
from mera_multi_hf.core.offline import check_hub_model, probe, refused


def check_judge(judge, judge_url, judge_tokenizer, judge_api_key) -> str:
    """A served judge answers, accepts the key and names its separator (the judge object
    made here is the one scoring reuses); a local judge's files are at hand."""
    from mera_multi_hf.core.http_client import key_or_env, one_secret
    from mera_multi_hf.judge.choose import get_judge
    from mera_multi_hf.judge.judges import API_KEY_ENV, Judge

    if isinstance(judge, Judge):
        return "a judge object given by the caller"
    if judge and judge_url:
        raise MeraError("give either --judge or --judge-url, not both")
    if judge_url:
        from mera_multi_hf.judge.http_judge import classify_url

        base = classify_url(judge_url).split("/", 3)
        models = "/".join(base[:3]) + "/v1/models"
        judge_api_key = key_or_env(judge_api_key, API_KEY_ENV)
        one_secret(
            "the judge URL",
            judge_url,
            judge_api_key,  # before any key is sent
            f"${API_KEY_ENV} or --judge-api-key",
        )
        status, _ = probe(models, judge_api_key)
        if status != 200:
            raise MeraError(refused(models, status, "--judge-api-key", API_KEY_ENV))
        options = {"api_key": judge_api_key} if judge_api_key else {}
        served = get_judge(None, judge_url, judge_tokenizer=judge_tokenizer, **options)
        return (  # the server's own words, shown through the sanitiser
            f"{served.url}: model {foreign(served.resolved_model())}, "
            f"separator {foreign(served.sep, quoted=True)}"
        )
    found = check_hub_model(
        str(judge), "judge model", "--judge", "a local judge folder (saved with save_pretrained)"
    )
    from mera_multi_hf.judge.http_judge import _load_tokenizer

    sep = _load_tokenizer(str(judge)).sep_token  # the judge input needs one
    if sep is None:
        raise MeraError(f"the judge tokenizer of {judge} has no sep_token: not a judge model")
    return f"{found}, separator {sep!r}"
