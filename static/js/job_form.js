/* Dashboard: the admin's "start a runtime job" form (templates/dashboard/_job_form.html);
   the study's jobs are the htmx panel #jobs-panel (templates/dashboard/_jobs.html). A static
   file, not an inline script, so the Content-Security-Policy can forbid inline code. */
(function () {
  const form = document.getElementById("job-form");
  const statusLine = document.getElementById("job-status");
  const bar = document.getElementById("job-bar");
  const csrf = JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"];
  const FINISHED = ["done", "done_with_errors", "failed", "cancelled"];
  function counts(job) {
    const p = job.progress || {};
    return [p.done ?? (Array.isArray(p) ? p[0] : 0), p.total ?? (Array.isArray(p) ? p[1] : 0)];
  }
  function outcome(job) {
    if (job.state === "done_with_errors") return ", " + job.n_errors + " item(s) failed";
    if (job.state === "failed") {
      const last = (job.errors || []).filter(e => !("item" in e)).pop();
      return last ? ": " + last.error : "";
    }
    return "";
  }
  function show(job) {
    const [done, total] = counts(job);
    const pct = total ? Math.round(100 * done / total) : (job.state === "done" ? 100 : 0);
    bar.hidden = false;
    bar.setAttribute("aria-valuenow", pct);
    bar.firstElementChild.style.width = pct + "%";
    statusLine.textContent = "Job " + job.id + ": " + job.state + " (" + done + "/" + total + ")" + outcome(job);
    if (!FINISHED.includes(job.state)) setTimeout(() => poll(job.id), 2000);
  }
  function poll(id) {
    fetch("/api/jobs/" + id + "/", {credentials: "same-origin"}).then(r => r.json()).then(show)
      .catch(e => statusLine.textContent = "Cannot read job " + id + ": " + e);
  }
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    const body = {kind: "score", study: form.dataset.study,
                  metrics: form.metrics.value.split(",").map(s => s.trim()).filter(Boolean),
                  model: form.model.value.trim()};
    statusLine.textContent = "Starting…";
    fetch("/api/jobs/", {method: "POST", credentials: "same-origin",
                         headers: {"Content-Type": "application/json", "X-CSRFToken": csrf},
                         body: JSON.stringify(body)})
      .then(r => r.json().then(data => ({ok: r.ok, data})))
      .then(({ok, data}) => ok ? show(data) : statusLine.textContent = "Refused: " + JSON.stringify(data))
      .catch(e => statusLine.textContent = "Failed: " + e);
  });
})();
