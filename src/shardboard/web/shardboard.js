// <shardboard-board>: a shardboard stack's leaderboard, embeddable in any page. Served by the stack itself as
// GET /shardboard.js (an ES module, no dependency); it reads GET /boards once and GET /leaderboard at the
// answer's Cache-Control max-age with If-None-Match. Attributes (reflected as properties): api, board, period,
// limit, record. Style it with the --shardboard-* custom properties and ::part(...) (docs: README).
const SCRIPT_BASE = new URL("./", import.meta.url).href;
const WINDOW = /^(\d+)([hd])$/;
const LABELS = { all: "All time", hour: "This hour", day: "Today", week: "This week", month: "This month",
  trending: "Trending" };
// Until an answer says how often its board changes, and after an error, look again this often.
const RETRY_MS = 30000;
// One GET /boards per API and page: every element on the page shares it.
const stacks = new Map();

export const periodLabel = (name) => {
  const w = WINDOW.exec(name);
  return LABELS[name] || (w ? `Last ${w[1]} ${w[2] === "h" ? "hours" : "days"}` : name);
};

export function stackOf(api) {
  if (!stacks.has(api)) {
    const asked = fetch(`${api}boards`, { cache: "no-store" }).then(async (answer) => {
      if (!answer.ok) throw new Error(`GET /boards: ${answer.status}`);
      return answer.json();
    });
    asked.catch(() => stacks.delete(api)); // a failed read is asked again next time
    stacks.set(api, asked);
  }
  return stacks.get(api);
}

// Only absolute http(s) URLs become links and images: metadata is whatever an admin put.
const httpUrl = (value) => typeof value === "string" && /^https?:\/\//i.test(value);
const number = (value) => Number(value).toLocaleString();

const STYLE = `
:host { display: block; font: var(--shardboard-font, inherit); color: var(--shardboard-color, inherit);
  background: var(--shardboard-background, transparent); }
:host([hidden]) { display: none; }
[part~=header] { display: flex; flex-wrap: wrap; gap: .5em; align-items: baseline; justify-content: space-between;
  margin-bottom: .5em; }
[part~=caption] { font-weight: 600; }
[part~=switch] { display: flex; flex-wrap: wrap; gap: .25em; }
[part~=period] { font: inherit; font-size: .85em; padding: .2em .6em; cursor: pointer; color: inherit;
  border: 1px solid var(--shardboard-border, #d0d7de); border-radius: 999px; background: transparent; }
[part~=period][aria-checked=true] { background: var(--shardboard-accent, #0969da); border-color: transparent;
  color: var(--shardboard-accent-text, #fff); }
[part~=period]:focus-visible { outline: 2px solid var(--shardboard-accent, #0969da); outline-offset: 2px; }
ol { list-style: none; margin: 0; padding: 0; }
li { display: grid; grid-template-columns: 2.2em auto 1fr auto 2.6em 2.6em; align-items: center; gap: .3em .6em;
  padding: .4em 0; border-bottom: 1px solid var(--shardboard-border, #d0d7de); }
[part~=rank] { text-align: right; font-variant-numeric: tabular-nums; color: var(--shardboard-muted, #57606a); }
[part~=thumbnail] { width: var(--shardboard-thumb-size, 2.5em); height: var(--shardboard-thumb-size, 2.5em);
  object-fit: cover; border-radius: var(--shardboard-radius, 4px); background: var(--shardboard-border, #eaeef2); }
.nothumb { width: 0; }
[part~=item] { min-width: 0; overflow-wrap: anywhere; }
[part~=link] { color: var(--shardboard-link, var(--shardboard-accent, #0969da)); text-decoration: none; }
[part~=link]:hover { text-decoration: underline; }
[part~=recent] { display: block; font-size: .75em; color: var(--shardboard-muted, #57606a); }
[part~=views] { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
[part~=move] { text-align: center; font-size: .8em; white-space: nowrap; }
[part~=day] { text-align: center; font-size: .75em; white-space: nowrap; }
.up { color: var(--shardboard-up, #1a7f37); }
.down { color: var(--shardboard-down, #cf222e); }
.new { color: var(--shardboard-accent, #0969da); }
[part~=status] { font-size: .85em; color: var(--shardboard-muted, #57606a); margin: .4em 0 0; }
[part~=status].error { color: var(--shardboard-down, #cf222e); }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
@media (prefers-reduced-motion: no-preference) {
  li.moved { animation: shardboard-moved 1.2s ease-out; }
  @keyframes shardboard-moved { from { background: var(--shardboard-highlight, #fff8c5); } }
}`;

export class ShardboardBoard extends HTMLElement {
  static observedAttributes = ["api", "board", "period", "limit", "record"];
  #etag = null;
  #timer = 0;
  #turn = 0; // each load's number: an answer to an older one is dropped
  #stack = null;
  #shown = new Map(); // id -> rank, to mark who moved since the last render
  #recorded = null;

  constructor() {
    super();
    const root = this.attachShadow({ mode: "open" });
    root.innerHTML = `<style>${STYLE}</style><div part="header"><span part="caption" id="caption"></span>`
      + `<div part="switch" role="radiogroup" aria-label="Period"></div></div>`
      + `<ol part="list" aria-labelledby="caption"></ol><p part="status" role="status"></p>`;
    this.onVisibility = () => (document.hidden ? clearTimeout(this.#timer) : this.refresh());
    root.querySelector("[part=switch]").addEventListener("keydown", (event) => this.#keys(event));
  }

  get api() {
    const given = this.getAttribute("api");
    return given ? (given.endsWith("/") ? given : `${given}/`) : SCRIPT_BASE;
  }
  set api(value) { this.setAttribute("api", value); }
  get board() { return this.getAttribute("board") || ""; }
  set board(value) { this.setAttribute("board", value); }
  get period() { return this.getAttribute("period") || "all"; }
  set period(value) { this.setAttribute("period", value); }
  get limit() { return this.getAttribute("limit"); }
  set limit(value) { this.setAttribute("limit", value); }
  get record() { return this.getAttribute("record"); }
  set record(value) { this.setAttribute("record", value); }
  // The last leaderboard document shown (null before the first).
  data = null;

  connectedCallback() {
    document.addEventListener("visibilitychange", this.onVisibility);
    this.#beacon();
    this.refresh();
  }

  disconnectedCallback() {
    document.removeEventListener("visibilitychange", this.onVisibility);
    clearTimeout(this.#timer);
    this.#turn++;
  }

  attributeChangedCallback(name, before, after) {
    if (before === after || !this.isConnected) return;
    if (name === "record") return this.#beacon();
    this.#etag = null;
    if (name !== "limit") this.#shown.clear();
    this.refresh();
  }

  // The stack's name for this board (the default board when none is set) and its N.
  #topN(stack) {
    const name = this.board || stack.board;
    const known = stack.boards.find((board) => board.name === name);
    return known ? known.top_n : name === stack.board ? stack.top_n : stack.category_top_n;
  }

  #query(stack) {
    const query = new URLSearchParams();
    if (this.board) query.set("board", this.board);
    const period = this.period;
    if (WINDOW.test(period)) query.set("window", period);
    else if (period !== "all") query.set("period", period);
    const asked = Number.parseInt(this.limit, 10);
    // Clamped to the board's N: a limit past it would be a 400, and a page can ask for no more than there is.
    if (Number.isFinite(asked)) query.set("limit", String(Math.min(Math.max(asked, 1), this.#topN(stack))));
    return query;
  }

  // Read the board now (if the tab shows), then again when its answer's max-age has passed.
  async refresh() {
    clearTimeout(this.#timer);
    if (!this.isConnected || document.hidden) return;
    const turn = ++this.#turn;
    let delay = RETRY_MS;
    const status = this.shadowRoot.querySelector("[part~=status]");
    try {
      const stack = (this.#stack = await stackOf(this.api));
      if (turn !== this.#turn) return;
      this.#switch(stack);
      const headers = this.#etag ? { "If-None-Match": this.#etag } : {};
      const answer = await fetch(`${this.api}leaderboard?${this.#query(stack)}`, { headers, cache: "no-store" });
      if (turn !== this.#turn) return;
      const maxAge = /max-age=(\d+)/.exec(answer.headers.get("Cache-Control") || "");
      if (maxAge) delay = Math.max(Number(maxAge[1]), 1) * 1000;
      if (answer.status !== 304) {
        const body = await answer.json();
        if (turn !== this.#turn) return;
        if (answer.status === 404) {
          this.#render(null, "No views yet.");
        } else if (!answer.ok) {
          throw new Error(body.message || answer.statusText);
        } else {
          this.#etag = answer.headers.get("ETag");
          this.#render(body, "");
        }
      }
    } catch (error) {
      if (turn !== this.#turn) return;
      status.className = "error";
      status.textContent = `Could not load the leaderboard: ${error.message}`;
    } finally {
      if (turn === this.#turn && this.isConnected && !document.hidden) {
        this.#timer = setTimeout(() => this.refresh(), delay);
      }
    }
  }

  // The period switch: one radio per period of the stack, the shown one checked and the only one in tab order.
  #switch(stack) {
    const nav = this.shadowRoot.querySelector("[part~=switch]");
    const names = stack.periods;
    if (nav.dataset.periods !== names.join()) {
      nav.dataset.periods = names.join();
      nav.replaceChildren(...names.map((name) => {
        const button = document.createElement("button");
        button.type = "button";
        button.setAttribute("role", "radio");
        button.setAttribute("part", "period");
        button.dataset.period = name;
        button.textContent = periodLabel(name);
        button.addEventListener("click", () => { this.period = name; });
        return button;
      }));
    }
    nav.hidden = names.length < 2;
    for (const button of nav.children) {
      const on = button.dataset.period === this.period;
      button.setAttribute("aria-checked", String(on));
      button.tabIndex = on || (!names.includes(this.period) && button === nav.firstChild) ? 0 : -1;
    }
  }

  // Arrow keys, Home and End move and select, as in any radio group; Tab leaves it.
  #keys(event) {
    const buttons = [...this.shadowRoot.querySelectorAll("[part~=period]")];
    const at = buttons.indexOf(this.shadowRoot.activeElement);
    const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[event.key];
    let next = step ? (at + step + buttons.length) % buttons.length : null;
    if (event.key === "Home") next = 0;
    if (event.key === "End") next = buttons.length - 1;
    if (next === null || at < 0) return;
    event.preventDefault();
    buttons[next].focus();
    this.period = buttons[next].dataset.period;
  }

  #render(board, message) {
    const root = this.shadowRoot;
    const where = board ? board.board : this.board || (this.#stack && this.#stack.board) || "";
    root.getElementById("caption").textContent = `Most viewed · ${periodLabel(this.period)}`;
    root.querySelector("ol").setAttribute("aria-label", `Most viewed on ${where}, ${periodLabel(this.period)}`);
    const status = root.querySelector("[part~=status]");
    status.className = "";
    status.textContent = message;
    const before = this.#shown;
    this.#shown = new Map();
    const rows = (board ? board.items : []).map((entry) => {
      this.#shown.set(entry.id, entry.rank);
      const row = this.#row(entry);
      if (before.size && before.get(entry.id) !== entry.rank) row.classList.add("moved");
      return row;
    });
    root.querySelector("ol").replaceChildren(...rows);
    this.data = board;
    if (board) this.dispatchEvent(new CustomEvent("shardboard-update", { detail: board, bubbles: true }));
  }

  #row(entry) {
    const make = (tag, part, text) => {
      const node = document.createElement(tag);
      if (part) node.setAttribute("part", part);
      if (text !== undefined) node.textContent = text;
      return node;
    };
    const meta = entry.meta || {};
    const row = make("li", "entry");
    row.dataset.id = entry.id;
    const picture = [meta.thumbnail, meta.image].find(httpUrl);
    let thumb = make("span");
    thumb.className = "nothumb";
    if (picture) {
      thumb = make("img", "thumbnail");
      Object.assign(thumb, { src: picture, alt: "", loading: "lazy" });
    }
    const title = typeof meta.title === "string" && meta.title ? meta.title : entry.id;
    const name = make(httpUrl(meta.url) ? "a" : "span", httpUrl(meta.url) ? "link" : "name", title);
    if (httpUrl(meta.url)) Object.assign(name, { href: meta.url, rel: "noopener" });
    const item = make("span", "item");
    item.append(name);
    if (entry.recent) {
      const recent = Object.entries(entry.recent).map(([span, views]) => `${span} ${number(views)}`).join(" · ");
      item.append(make("small", "recent", recent));
    }
    const views = make("span", "views", number(entry.views));
    views.append(make("span", "", " views"));
    views.lastChild.className = "sr";
    row.append(make("span", "rank", String(entry.rank)), thumb, item, views,
      this.#move(entry.rank, entry.previous_rank, "move", "new on the board", "since the last refresh", make),
      this.#move(entry.rank, entry.day_before_rank, "day", "", "in a day", make));
    return row;
  }

  // Movement since the snapshot before (previous_rank; null: new to the board) or a day before (day_before_rank;
  // null: not on the board then, or not known).
  #move(rank, before, part, fresh, when, make) {
    const known = before !== null && before !== undefined;
    const [text, kind, said] = !known ? [fresh && "new", "new", fresh]
      : before > rank ? [`▲${before - rank}`, "up", `up ${before - rank} ${when}`]
        : before < rank ? [`▼${rank - before}`, "down", `down ${rank - before} ${when}`]
          : ["–", "same", `unchanged ${when}`];
    const move = make("span", part, text || "");
    move.className = kind;
    if (said) move.title = known ? `${said} (rank ${before} then)` : said;
    if (said) move.setAttribute("aria-label", said);
    return move;
  }

  // record="ITEM": one view of this page's item, sent as a beacon (text/plain JSON, no preflight), once per item.
  #beacon() {
    const item = this.record;
    if (!item || item === this.#recorded || !navigator.sendBeacon) return;
    this.#recorded = item;
    const view = this.board ? { id: item, boards: [this.board] } : { id: item };
    navigator.sendBeacon(`${this.api}views`, JSON.stringify(view));
  }
}

if (!customElements.get("shardboard-board")) customElements.define("shardboard-board", ShardboardBoard);
