/* Dashboard: the admin's "start a runtime job" form and the study's recent jobs
   (templates/dashboard/_job_form.html). A static file, not an inline script, so the
   Content-Security-Policy can forbid inline code. */
(function () {
  const form = document.getElementById("job-form");
  const statusLine = document.getElementById("job-status");
  const bar = document.getElementById("job-bar");
  const list = document.getElementById("job-list");
  const csrf = JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"];
  const FINISHED = ["done", "done_with_errors", "failed"];
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
    else refreshList();
  }
  function poll(id) {
    fetch("/api/jobs/" + id + "/", {credentials: "same-origin"}).then(r => r.json()).then(show)
      .catch(e => statusLine.textContent = "Cannot read job " + id + ": " + e);
  }
  function cell(row, text) {
    const td = row.insertCell();
    td.textContent = text;
    return td;
  }
  function refreshList() {
    fetch("/api/jobs/", {credentials: "same-origin"}).then(r => r.json()).then(data => {
      const jobs = (data.jobs || []).filter(j => (j.params || {}).study === form.dataset.study);
      const body = list.tBodies[0];
      body.replaceChildren();
      for (const job of jobs) {
        const row = body.insertRow();
        row.dataset.state = job.state;
        const [done, total] = counts(job);
        cell(row, String(job.id));
        cell(row, job.kind);
        cell(row, job.state).className = "state-" + job.state;
        cell(row, done + "/" + total).className = "num";
        cell(row, String(job.n_errors)).className = "num";
        cell(row, job.finished_at ? job.finished_at.replace("T", " ").slice(0, 19) : "");
      }
      list.hidden = jobs.length === 0;
    }).catch(() => {});
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
  refreshList();
})();
