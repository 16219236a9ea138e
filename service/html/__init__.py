"""Self-contained HTML reports: ``goldwatch eval --html``, ``goldwatch replay --html`` and
the service's status page at ``/``.

Pages carry their CSS inline and their charts as inline SVG rendered server-side with
matplotlib (imported on first use); they load nothing from the network and run no script,
so they open offline and can be attached to a CI run or a ticket as they are.
"""

from service.html.eval_page import render_eval_html
from service.html.replay_page import render_replay_html
from service.html.status import render_status_page

__all__ = ["render_eval_html", "render_replay_html", "render_status_page"]
