// Quorum SM dashboard: polls the read-only JSON API, listens to /api/events (SSE).
"use strict";
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
const when = (ms) => ms ? new Date(ms).toISOString().replace("T", " ").slice(0, 19) + " UTC" : "-";

async function get(path, kind) {
  const r = await fetch(path, {credentials: "same-origin", cache: "no-store"});
  if (!r.ok) throw new Error(path + ": HTTP " + r.status + " " + (await r.text()));
  return kind === "text" ? r.text() : r.json();
}

async function status() {
  try {
    const s = await get("/api/status");
    $("conn").textContent = "";
    $("self-id").textContent = s.self_id;
    $("term").textContent = s.term;
    $("master").textContent = s.leader_id ? "replica " + s.leader_id : "none";
    $("master").dataset.leader = s.leader_id;
    $("sm").textContent = s.sm ? `${s.sm.state} LID ${s.sm.sm_lid} GUID ${s.sm.sm_guid} (replica ${s.sm.replica_id})` : "-";
    $("commit").textContent = s.commit_index + " / " + s.applied_index;
    $("policy").textContent = `${s.policy_version} (tenants ${s.tenants_version})`;
    $("alarms").className = s.alarms.length ? "on" : "";
    $("alarm-list").innerHTML = s.alarms.map((a) => `<li data-replica="${a.replica}">${esc(a.text)}</li>`).join("");
    $("sweep").textContent = when(s.last_sweep_unix_ms);
    $("switches").textContent = s.fabric.switches;
    $("hosts").textContent = s.fabric.hosts;
    $("links").textContent = s.fabric.links;
    const lh = s.link_health;
    $("link-health").innerHTML = lh
      ? `<span class="lh-ok">${lh.ok} ok</span>, <span class="lh-degraded">${lh.degraded} degraded</span>, <span class="lh-down">${lh.down} down</span>`
      : "-";
    $("replicas").tBodies[0].innerHTML = s.replicas.map((r) =>
      `<tr class="${r.role === "unreachable" ? "dead" : r.id === s.leader_id ? "leader" : ""}" data-id="${r.id}"><td>${r.id}</td><td>${esc(r.role)}</td>` +
      `<td>${r.lag}</td><td>${r.match_index}</td><td>${r.voter ? "yes" : "no"}</td><td>${esc(r.admin_address)}</td></tr>`).join("");
  } catch (e) {
    $("conn").textContent = "status: " + e.message;
  }
}

async function fabric() {
  try { $("fabric").innerHTML = await get("/api/fabric.svg", "text"); }
  catch (e) { $("fabric").textContent = e.message; }
}

async function tenants() {
  try {
    const t = await get("/api/tenants");
    $("tenants").tBodies[0].innerHTML = t.resolved.map((x) =>
      `<tr><td>${esc(x.name)}</td><td>${esc(x.pkey)}</td><td>${esc(x.kind)}</td><td>${x.ports}</td></tr>`).join("") ||
      "<tr><td colspan=4>no tenants</td></tr>";
  } catch (e) { $("tenants").tBodies[0].innerHTML = `<tr><td colspan=4 class="err">${esc(e.message)}</td></tr>`; }
}

async function audit() {
  $("audit-note").textContent = "reading…";
  // Progress of the master's read-back while it runs.
  const poll = setInterval(async () => {
    try {
      const p = await get("/api/audit-progress");
      if (p.running) $("audit-note").textContent = `reading… ${p.ports_done}/${p.ports_total} ports (master on replica ${p.replica})`;
    } catch (e) { /* the audit result says what went wrong */ }
  }, 300);
  try {
    $("matrix").innerHTML = await get("/api/audit.svg", "text");
    $("audit-note").textContent = "read at " + when(Date.now());
  } catch (e) { $("audit-note").textContent = e.message; }
  clearInterval(poll);
}

function spark(name, values) {
  const w = 160, h = 32, n = values.length;
  const max = Math.max(1, ...values);
  const pts = values.map((v, i) => `${n > 1 ? (i * w / (n - 1)).toFixed(1) : 0},${(h - 2 - v * (h - 4) / max).toFixed(1)}`).join(" ");
  const last = n ? values[n - 1] : 0;
  return `<span class="spark">${esc(name)} <b>${last}</b><br><svg width="${w}" height="${h}" viewBox="0 0 ${w} ${h}">` +
    `<rect width="${w}" height="${h}" fill="#f3f5f8"/><polyline fill="none" stroke="#1f3a5f" stroke-width="1.5" points="${pts}"/></svg></span>`;
}

async function metrics() {
  try {
    const m = (await get("/api/metrics")).samples;
    const col = (k) => m.map((s) => s[k]);
    $("sparks").innerHTML = spark("commits/s", col("commits")) + spark("max lag", col("max_lag")) +
      spark("term", col("term")) + spark("events/s", col("events")) + spark("leader", col("leader_id"));
  } catch (e) { $("sparks").textContent = e.message; }
}

let lastSeq = 0;
function events() {
  const src = new EventSource("/api/events");
  src.addEventListener("event", (m) => {
    const e = JSON.parse(m.data);
    if (e.seq <= lastSeq) return;
    lastSeq = e.seq;
    const li = document.createElement("li");
    li.className = e.kind;
    li.dataset.kind = e.kind;
    li.innerHTML = `<span class="kind">${esc(e.kind)}</span> ${esc(when(e.unix_ms))} — ${esc(e.text)}`;
    $("events").prepend(li);
    while ($("events").children.length > 200) $("events").lastChild.remove();
    if (e.kind === "leader" || e.kind === "failover") status();
    if (e.kind === "subnet" || (e.kind === "sweep" && e.text.includes("complete"))) fabric();
  });
  src.onerror = () => { $("conn").textContent = "event stream interrupted; reconnecting…"; };
  src.onopen = () => { $("conn").textContent = ""; };
}

$("audit-btn").addEventListener("click", audit);
status(); fabric(); tenants(); metrics(); events();
setInterval(status, 2000);
setInterval(metrics, 2000);
setInterval(fabric, 30000);
