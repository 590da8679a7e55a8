// A small Markdown renderer that builds DOM nodes: text from the model only ever becomes text
// nodes (textContent), so HTML in a reply is shown as written and never runs.

const SAFE_LINK = /^(https?:|mailto:)/i;
const INLINE = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|\*\*(?=\S)([\s\S]*?\S)\*\*|__(?=\S)([\s\S]*?\S)__|\*(?=[^\s*])([^*]*?[^\s*]|[^\s*])\*|\[([^\]\n]+)\]\(([^)\s]+)\)/g;

function inline(parent, text) {
  // A regex of its own per call: the recursion below must not move the caller's position.
  const re = new RegExp(INLINE.source, "g");
  let last = 0;
  let m;
  while ((m = re.exec(text)) !== null) {
    if (m.index > last) parent.append(document.createTextNode(text.slice(last, m.index)));
    if (m[1] !== undefined) {
      const code = document.createElement("code");
      code.textContent = m[2].trim() === "" ? m[2] : m[2].replace(/^ (.*) $/s, "$1");
      parent.append(code);
    } else if (m[3] !== undefined || m[4] !== undefined) {
      const strong = document.createElement("strong");
      inline(strong, m[3] !== undefined ? m[3] : m[4]);
      parent.append(strong);
    } else if (m[5] !== undefined) {
      const em = document.createElement("em");
      inline(em, m[5]);
      parent.append(em);
    } else {
      const href = m[7];
      if (SAFE_LINK.test(href)) {
        const a = document.createElement("a");
        a.href = href;
        a.rel = "noopener noreferrer nofollow";
        a.target = "_blank";
        inline(a, m[6]);
        parent.append(a);
      } else {
        parent.append(document.createTextNode(m[0]));
      }
    }
    last = re.lastIndex;
  }
  if (last < text.length) parent.append(document.createTextNode(text.slice(last)));
}

function lines(parent, group) {
  group.forEach((line, i) => {
    if (i > 0) parent.append(document.createElement("br"));
    inline(parent, line);
  });
}

const FENCE = /^\s{0,3}(```|~~~)\s*([\w+-]*)\s*$/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const ITEM = /^\s{0,3}([-*+]|\d{1,9}[.)])\s+(.*)$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;

export function renderMarkdown(text) {
  const out = document.createDocumentFragment();
  const src = text.replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < src.length) {
    const line = src[i];
    if (!line.trim()) {
      i++;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      const body = [];
      i++;
      while (i < src.length && !(src[i].trim().startsWith(fence[1]) && src[i].trim() === fence[1])) {
        body.push(src[i]);
        i++;
      }
      i++;
      const pre = document.createElement("pre");
      const code = document.createElement("code");
      if (fence[2]) code.dataset.lang = fence[2];
      code.textContent = body.join("\n");
      pre.append(code);
      out.append(pre);
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      const h = document.createElement("h" + Math.min(6, heading[1].length + 2));
      inline(h, heading[2]);
      out.append(h);
      i++;
      continue;
    }
    if (RULE.test(line)) {
      out.append(document.createElement("hr"));
      i++;
      continue;
    }
    if (QUOTE.test(line)) {
      const group = [];
      while (i < src.length && QUOTE.test(src[i])) group.push(QUOTE.exec(src[i++])[1]);
      const q = document.createElement("blockquote");
      q.append(renderMarkdown(group.join("\n")));
      out.append(q);
      continue;
    }
    const item = ITEM.exec(line);
    if (item) {
      const ordered = /\d/.test(item[1][0]);
      const list = document.createElement(ordered ? "ol" : "ul");
      if (ordered && parseInt(item[1], 10) !== 1) list.start = parseInt(item[1], 10);
      while (i < src.length) {
        const m = ITEM.exec(src[i]);
        if (!m || /\d/.test(m[1][0]) !== ordered) break;
        const li = document.createElement("li");
        const group = [m[2]];
        i++;
        while (i < src.length && /^\s{2,}\S/.test(src[i]) && !ITEM.exec(src[i])) group.push(src[i++].trim());
        lines(li, group);
        list.append(li);
      }
      out.append(list);
      continue;
    }
    const group = [];
    while (
      i < src.length &&
      src[i].trim() &&
      !FENCE.test(src[i]) &&
      !HEADING.test(src[i]) &&
      !QUOTE.test(src[i]) &&
      !(group.length && ITEM.test(src[i]))
    ) {
      group.push(src[i++]);
    }
    const p = document.createElement("p");
    lines(p, group);
    out.append(p);
  }
  return out;
}
