"""Names vulture cannot see being used (tests/test_layout.py runs it over mera_multi_hf/).

Each is called or read by a library or by name, never dead: keep this list short, and
delete dead code rather than adding it here. Never imported or run.
"""

# ruff: noqa
_ = object

# module-level __getattr__: Python calls it for the lazily imported names
__getattr__
# jinja2 calls these on a bytecode cache (reporting/page_templates.py)
_.load_bytecode
_.dump_bytecode
# datasets calls these on a builder; the builder classes are found by their TASK_KEY
_._info
_._split_generators
dl_manager
_._generate_tables
_._patched_for_streaming
_.BUILDER_CONFIGS
_.DEFAULT_CONFIG_NAME
AQUARIA, CommonVideoQA, LabTabVQA, RealVideoQA, RealVQA, RuCLEVR, RuCommonVQA, RuEnvAQA
RuHHHImage, RuHHHVideo, RuMathVQA, RuNaturalScienceVQA, RuSLUn, RuTiEAudio, RuTiEImage
SchoolScienceVQA, UniScienceVQA, WEIRD
# attributes set for datasets, transformers, PyAV, uvicorn and huggingface_hub to read
_.config_name
_.dataset_size
_.download_size
_.size_in_bytes
_.truncation_side
_.thread_type
_.thread_count  # PyAV: the decoding threads (their frames are priced, core/limits.py)
_.pix_fmt
_.decoder
_.HF_DATASETS_OFFLINE
_.do_sample
_.num_beams
_.temperature
_.top_k
_.top_p
_.should_exit
_.exc_text  # logging.Formatter reads it (a masked traceback)
_.allow_abbrev
_.pre_tokenizer
_.post_processor
# overrides whose signature the base class fixes (uvicorn's protocol, socketserver, PIL)
_.send_400_response
poll_interval
optimize
# prediction filters, registered by @register_filter and run by name (filters.FILTERS)
remove_whitespace, take_first, lowercase, slot_clean
# the evaluate modules of the Spaces (space_modules/): evaluate finds the class, calls _compute
ExactMatch, GroupExactMatch, JudgeScore, SlotF1
_._compute
# FastAPI routes (registered by decorator) and uvicorn --factory entry points
health
tokenizer_info
chat_completions
app_from_env
# backends registered by @register_backend and made by kind (registry.BUILT_IN names the module)
OpenAIBackend
# the tiny-model recipes, named by string in the families table (tiny_models/__init__.py)
qwen2_vl, qwen3_vl, gemma3, idefics3, llava_onevision, internvl, qwen2_5_omni, phi4_multimodal
# public API that users and the tests call (documented in the README and the cards)
register_task, read_submission, judge_example_scores, build_random_llava, compare_runs
_.serve
# an option field read by name from the parsed flags (evaluate_cmd.LaunchOptions)
allow_oversubscribe
# urllib3's pool and pool-manager attributes that core/http_client.py sets for urllib3 to read
ConnectionCls
pool_classes_by_scheme
# pydantic request fields the servers read by name (model_dump, getattr)
_.input
_.max_completion_tokens
# results.json's record fields (records.py), read by name through dataclasses.fields and
# getattr in to_dict
official_metrics, judge_not_computed, unofficial, leaderboard_metrics, task_score_metrics
task_score_definition, official_total, not_scorable, partial_task_scores, schema_version
_.statistic  # PromptEffect's field: results.json's prompts.effect carries it (dataclasses.asdict)
