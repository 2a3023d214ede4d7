"""The page's config without the API schemas no caller reads (issue 52).

Gradio 6.31 puts into the config of every component (the config the page's HTML embeds and
/config serves) the component's API schema three times (api_info, api_info_as_input,
api_info_as_output) and its example_inputs: on this page ~200 KB of the ~690 KB config. The
page's frontend never reads any of them (templates/frontend holds no "api_info_as" nor
"example_inputs"; its client's API info is window.gradio_api_info, computed by the server).
Two readers remain, and both read only the components of API endpoints:

- Gradio's get_api_info (the HTML's gradio_api_info, /gradio_api/info, the API page) reads
  api_info* from the config for the inputs and outputs of every endpoint that is not private;
- gradio_client, reading /config, asks a component's api_info only to know whether that
  endpoint's arguments are files, and finds none where the key is missing.

Every page event is private (page/endpoints.py: private_except), so only the public gr.api
endpoints' components keep their schemas: these four keys go from every other component.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import gradio as gr
from gradio.data_classes import BlocksConfigDict

# What Gradio's Blocks.config_for_block adds for a component that is not skip_api, besides its props.
API_KEYS = ("api_info", "api_info_as_input", "api_info_as_output", "example_inputs")
Config = TypeVar("Config", bound=Mapping[str, Any])  # Gradio's BlocksConfigDict, or a plain dict


def api_component_ids(demo: gr.Blocks) -> set[int]:
    """The components that are an input or an output of an event that is not private."""
    return {block._id for fn in demo.fns.values() if fn.api_visibility != "private"
            for block in [*fn.inputs, *fn.outputs]}


def trimmed(config: Config, keep: set[int]) -> Config:
    """config (Gradio's get_config_file()), its components outside `keep` without API_KEYS (in place)."""
    for component in config.get("components", []):
        if component["id"] not in keep:
            for key in API_KEYS:
                component.pop(key, None)
    return config


def install(demo: gr.Blocks) -> None:
    """Every config Gradio builds for demo from now on (launch's blocks.config, which the HTML,
    /config and the API info read) comes trimmed; the events' visibility is read at each build,
    so call it at any time."""
    build = demo.get_config_file

    def get_config_file() -> BlocksConfigDict:
        return trimmed(build(), api_component_ids(demo))

    # An instance attribute: Gradio calls demo.get_config_file() wherever it builds the config.
    demo.get_config_file = get_config_file  # type: ignore[method-assign]
