"""A scripted Backend for unit tests: answers come from a function of the prompt text
(or from a queue), and every generate() call is recorded."""
from models_runtime.backends.base import Backend, Generation


def prompt_text(prompt):
    return prompt if isinstance(prompt, str) else "\n".join(m["content"] for m in prompt)


class ScriptedBackend(Backend):
    name = "scripted"

    def __init__(self, respond):
        """respond(text, params, attempt_index) -> str; or a list of texts served in order."""
        super().__init__()
        self.respond = respond
        self.calls = []  # one entry per generate(): (number of prompts, params)
        self.seen = []  # every prompt text, in order
        self._queue = list(respond) if isinstance(respond, list) else None

    def _generate(self, prompts, params):
        self.calls.append((len(prompts), params))
        out = []
        for p in prompts:
            text = prompt_text(p)
            self.seen.append(text)
            gens = []
            for j in range(params.n):
                answer = self._queue.pop(0) if self._queue is not None else self.respond(text, params, j)
                gens.append(Generation(text=answer, tokens_in=len(text.split()), tokens_out=len(answer.split())))
            out.append(gens)
        return out
