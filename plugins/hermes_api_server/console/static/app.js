// The console's entry: sign-in, the session bar and the router between the run list and one run.
import { api, ApiError, el, setCsrf } from "./api.js";
import { RunView } from "./run.js";
import { RunsView } from "./runs.js";

const main = document.getElementById("main");
const who = document.getElementById("who");
const logout = document.getElementById("logout");
let view = null;

// Read-only facts for tests and benchmarks (what the page received and showed).
window.hermesConsole = { ready: false };

export function navigate(path) {
  history.pushState(null, "", path);
  route();
}

function signedOut(message) {
  if (view) view.dispose();
  view = null;
  setCsrf(null);
  who.textContent = "";
  logout.hidden = true;
  const key = el("input", {
    id: "key",
    type: "password",
    name: "key",
    autocomplete: "current-password",
    placeholder: "API key",
    required: true,
  });
  const error = el("p", { id: "signin-error", class: "error", role: "alert", text: message || "" });
  const form = el(
    "form",
    { id: "signin", class: "card signin" },
    el("h2", { text: "Sign in" }),
    el("p", { class: "muted", text: "Type the API key of this server (hermes api --show-key)." }),
    key,
    el("button", { type: "submit", id: "signin-submit" }, "Sign in"),
    error,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    error.textContent = "";
    try {
      const session = await api("POST", "/session", { key: key.value });
      key.value = "";
      accept(session);
      route();
    } catch (err) {
      error.textContent = err.status === 401 ? "That key is not accepted." : err.message;
    }
  });
  main.replaceChildren(form);
  key.focus();
  window.hermesConsole.ready = true;
}

function accept(session) {
  setCsrf(session.csrf_token);
  who.textContent = "key " + session.principal + "…";
  logout.hidden = false;
}

async function route() {
  if (view) view.dispose();
  view = null;
  let session;
  try {
    session = await api("GET", "/session");
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return signedOut();
    main.replaceChildren(el("p", { class: "error", text: err.message }));
    return;
  }
  accept(session);
  const match = /^\/console\/runs\/([A-Za-z0-9_-]+)\/?$/.exec(location.pathname);
  view = match ? new RunView(main, match[1], onAuthLost, navigate) : new RunsView(main, navigate, onAuthLost);
  window.hermesConsole.ready = true;
}

function onAuthLost() {
  signedOut("Your console session ended; sign in again.");
}

logout.addEventListener("click", async () => {
  try {
    await api("DELETE", "/session");
  } catch (err) {
    // Already signed out: the page shows the form either way.
  }
  signedOut();
});

document.getElementById("home").addEventListener("click", (ev) => {
  ev.preventDefault();
  navigate("/console");
});

window.addEventListener("popstate", route);
route();
