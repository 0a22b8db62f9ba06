// The playground page: send the program, show what came back.
import { createEditor, editorText } from "./editor.js";
import { functionsChart, linesTable } from "./chart.js";

const EXAMPLE = `import json, sys

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

data = json.loads(sys.stdin.read() or "[10, 15]")
print([fib(n) for n in data])

# Anything else is refused, with the rule that would allow it:
try:
    open("/etc/passwd")
except OSError as e:
    print("refused:", e.strerror)
`;

const $ = (id) => document.getElementById(id);
const editor = createEditor($("editor"), EXAMPLE);

function summary(report) {
  const dl = $("summary");
  dl.replaceChildren();
  const rows = [
    ["exit", report.exit_code !== null ? String(report.exit_code) : `killed by ${report.signal_name}`],
    ["limit", report.limit_exceeded || "none"],
    ["wall", `${report.time.wall_ms} ms`],
    ["cpu", `${report.time.cpu_user_ms} ms user, ${report.time.cpu_sys_ms} ms system`],
    ["memory", `${report.memory.peak_rss_kb} KB peak RSS, ${report.memory.peak_python_alloc_bytes ?? "?"} B Python`],
    ["output", `${report.output.stdout_bytes} + ${report.output.stderr_bytes} bytes${report.output.truncated ? " (truncated)" : ""}`],
  ];
  if (report.profile) rows.push(["calls", `${report.profile.calls_total}, ${report.profile.exceptions_raised} exceptions raised`]);
  for (const [k, v] of rows) {
    const dt = document.createElement("dt");
    const dd = document.createElement("dd");
    dt.textContent = k;
    dd.textContent = v;
    dd.id = `summary-${k}`;
    dl.append(dt, dd);
  }
}

function denials(list) {
  const table = $("denials");
  const body = table.tBodies[0];
  body.replaceChildren();
  for (const d of list) {
    const tr = document.createElement("tr");
    tr.className = "denial";
    const rule = document.createElement("code");
    rule.textContent = d.rule_to_add || "—";
    for (const cell of [d.kind, d.subject || "", rule]) {
      const td = document.createElement("td");
      if (typeof cell === "string") td.textContent = cell;
      else td.append(cell);
      tr.append(td);
    }
    tr.title = d.message || "";
    body.append(tr);
  }
  table.hidden = list.length === 0;
  $("no-denials").hidden = list.length !== 0;
}

async function run() {
  const button = $("run");
  const source = editorText(editor);
  button.disabled = true;
  $("status").textContent = "running…";
  try {
    const resp = await fetch("/v1/runs", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ source, stdin: $("stdin").value }),
    });
    const body = await resp.json();
    if (!resp.ok) {
      $("status").textContent = `error ${resp.status}: ${body.error}${body.field ? ` (${body.field})` : ""}`;
      return;
    }
    $("stdout").textContent = body.stdout;
    $("stderr").textContent = body.stderr;
    summary(body.report);
    denials(body.report.denials || []);
    const profile = body.report.profile || { functions: [], lines: {} };
    functionsChart($("functions-chart"), profile.functions);
    linesTable($("lines"), source, profile.lines);
    $("status").textContent = "done";
  } catch (e) {
    $("status").textContent = `error: ${e.message}`;
  } finally {
    button.disabled = false;
  }
}

$("run").addEventListener("click", run);
document.addEventListener("keydown", (e) => {
  if ((e.ctrlKey || e.metaKey) && e.key === "Enter") run();
});
