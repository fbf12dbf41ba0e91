/// The editors' page: one static HTML file with a little script that calls the JSON routes.
///
/// `?user=ID&week=W&source=S` opens one reader's previews, and the page keeps those three in its URL
/// as the editor moves (a link to share); `?q=PREFIX` searches at once and opens the first match.
/// When every preview image has loaded, `#status` gets `data-state="done"`, the counts of images and
/// decoded images and the page's query (`data-link`; the browser test reads them). With test devices
/// (`serve --test-devices`), a "Send to my device" card beside the reader: a device picker (tokens
/// masked), the button, and `#test-send-result` with the message id or the error (`data-state`
/// `sent` or `error`).
enum PreviewPageHTML {
    static let page = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>digest — previews</title>
    <style>
      body { font: 14px/1.4 system-ui, Roboto, "Noto Sans", sans-serif; margin: 0; background: #f6f7f9; color: #202124; }
      header { background: #fff; border-bottom: 1px solid #dadce0; padding: 12px 20px; display: flex; gap: 12px; align-items: center; flex-wrap: wrap; }
      header h1 { font-size: 16px; margin: 0 12px 0 0; }
      input, select, button { font: inherit; padding: 5px 8px; border: 1px solid #c4c7c5; border-radius: 6px; background: #fff; }
      button { cursor: pointer; }
      #users { display: flex; gap: 6px; flex-wrap: wrap; padding: 8px 20px; }
      #users button.current { background: #e8f0fe; border-color: #1a73e8; }
      main { padding: 0 20px 40px; }
      .summary { display: flex; gap: 24px; flex-wrap: wrap; align-items: flex-start; margin: 12px 0; }
      .card { background: #fff; border: 1px solid #dadce0; border-radius: 8px; padding: 10px 14px; }
      table { border-collapse: collapse; }
      td, th { padding: 2px 8px; text-align: left; }
      .bar { width: 160px; height: 8px; background: #e8eaed; border-radius: 4px; overflow: hidden; }
      .bar > div { height: 100%; background: #1e8e3e; }
      .bar.over > div { background: #d93025; }
      .surfaces { display: flex; gap: 18px; flex-wrap: wrap; align-items: flex-start; }
      figure { margin: 0; background: #fff; border: 1px solid #dadce0; border-radius: 8px; padding: 8px; }
      figcaption { font-size: 12px; color: #5f6368; max-width: 376px; }
      figcaption .cut { color: #b3261e; }
      .notes { color: #b3261e; }
      .error { color: #b3261e; padding: 12px 20px; }
      tr.reader td { background: #e8f0fe; }
      td.n { text-align: right; font-variant-numeric: tabular-nums; }
      code { font-size: 12px; }
      #comparison li.changed { background: #fce8e6; }
      #comparison .new li.changed { background: #e6f4ea; }
      #comparison ol { font-size: 12px; padding-left: 20px; max-width: 376px; }
      #send-test .hint { font-size: 12px; color: #5f6368; max-width: 340px; }
      #test-send-result { max-width: 340px; overflow-wrap: anywhere; }
    </style>
    </head>
    <body>
    <header>
      <h1>digest previews</h1>
      <form id="search"><input id="q" placeholder="user id or prefix" autocomplete="off"> <button>Search</button></form>
      <label>Week <select id="week"></select></label>
      <label>Source <select id="source"><option value="auto">outbox, else composed now</option><option value="computed">composed now</option><option value="outbox">outbox</option></select></label>
      <button id="reload" type="button">Reload</button>
      <a id="share" href="">link to this preview</a>
      <span id="status" data-state="idle"></span>
    </header>
    <div id="users"></div>
    <div id="error" class="error"></div>
    <main id="main"></main>
    <script>
    const params = new URLSearchParams(location.search);
    const token = params.get('token');
    const state = { user: null, week: params.get('week') || '', source: params.get('source') || 'auto' };
    const $ = (id) => document.getElementById(id);
    $('source').value = state.source;

    function url(path) {
      const u = new URL(path, location.href);
      u.search = u.search;  // keep the path's own query
      if (token) u.searchParams.set('token', token);
      return u.toString();
    }
    async function fetchJSON(path, options) {
      const response = await fetch(url(path), options);
      const body = await response.json().catch(() => ({}));
      if (!response.ok) throw new Error((body.error && body.error.message) || ('HTTP ' + response.status));
      return body;
    }
    const getJSON = (path) => fetchJSON(path);
    // A JSON body, declared so: the server refuses a test send that is not (another site's form could send it).
    const postJSON = (path, body) => fetchJSON(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    // serve --test-devices: the devices "Send to my device" offers (none: no such card).
    let testDevices = [];
    const testDevicesLoaded = getJSON('api/test-devices').then((devices) => { testDevices = devices; }, () => {});
    function el(tag, attrs = {}, ...children) {
      const node = document.createElement(tag);
      for (const [k, v] of Object.entries(attrs)) {
        if (k === 'class') node.className = v; else if (k.startsWith('on')) node[k] = v; else node.setAttribute(k, v);
      }
      for (const child of children.flat()) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
      return node;
    }
    function setStatus(text, data = {}) {
      const status = $('status');
      status.textContent = text;
      for (const [k, v] of Object.entries(data)) status.dataset[k] = v;
    }

    async function search(event) {
      if (event) event.preventDefault();
      $('error').textContent = '';
      setStatus('searching…', { state: 'searching' });
      try {
        const users = await getJSON('api/users?q=' + encodeURIComponent($('q').value.trim()));
        $('users').replaceChildren(...users.map((u) => el('button', {
          type: 'button', 'data-user': u.id, class: u.id === state.user ? 'current' : '',
          onclick: () => pick(u.id) }, `${u.id} · ${u.locale} · ${u.platforms.join('/') || 'no devices'}${u.optedOut ? ' · opted out' : ''}`)));
        setStatus(users.length ? `${users.length} users` : 'no users match', { state: 'searched', users: users.length });
        return users;
      } catch (error) {
        $('error').textContent = error.message;
        setStatus('error', { state: 'error' });
        return [];
      }
    }

    function pick(user) {
      state.user = user;
      for (const b of $('users').querySelectorAll('button')) b.className = b.dataset.user === user ? 'current' : '';
      load();
    }

    async function load() {
      if (!state.user) return;
      $('error').textContent = '';
      setStatus('rendering…', { state: 'loading' });
      const query = new URLSearchParams({ user: state.user, source: state.source });
      if (state.week) query.set('week', state.week);
      try {
        const page = await getJSON('api/preview?' + query);
        await testDevicesLoaded;
        show(page);
      } catch (error) {
        $('main').replaceChildren();
        $('error').textContent = error.message;
        setStatus('error', { state: 'error' });
      }
    }

    // The reader, week and source in the page's own URL (and the share link), so it can be sent on.
    function remember() {
      const query = new URLSearchParams({ user: state.user, week: state.week, source: state.source });
      if (token) query.set('token', token);
      history.replaceState(null, '', '?' + query);
      $('share').href = location.href;
      $('status').dataset.link = '?' + query;
    }

    function pct(x) { return x === null || x === undefined ? '–' : (100 * x).toFixed(1) + '%'; }

    // The week's delivery and open figures, the reader's rows (variant, platform, locale) marked.
    function reportCard(page) {
      const report = page.report;
      const card = el('div', { class: 'card', id: 'report' }, el('div', {}, el('strong', {}, `Week ${page.week}: delivery and opens`)));
      if (!report || !report.rows.length) {
        card.append(el('div', {}, 'nothing sent and no events yet (digest collect)'));
        return card;
      }
      const mine = new Set((page.outbox || []).map((o) => [o.variant, o.platform, o.locale || null].join('|')));
      const table = el('table', {}, el('tr', {}, ...['variant', 'platform', 'locale', 'sent', 'received', 'displayed', 'opened', 'open rate (95% CI)'].map((h) => el('th', {}, h))));
      for (const r of report.rows) {
        const key = [r.variant, r.platform, r.locale].join('|');
        table.append(el('tr', { class: mine.has(key) ? 'reader' : '' }, el('td', {}, r.variant), el('td', {}, r.platform), el('td', {}, r.locale || '–'),
          ...[r.sent, r.received, r.displayed, r.opened].map((n) => el('td', { class: 'n' }, n)),
          el('td', { class: 'n' }, `${pct(r.open_rate)}` + (r.open_rate_low === null ? '' : ` (${pct(r.open_rate_low)}–${pct(r.open_rate_high)})`))));
      }
      // The same chart as `digest report --chart`, as an image (an SVG in an img runs nothing).
      if (page.chart) {
        card.append(el('img', { id: 'report-chart', alt: 'open rate per variant and arm, with 95% intervals',
          src: 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(page.chart), style: 'max-width: 100%' }));
      }
      card.append(table);
      if (report.split && report.split.p_value !== undefined && report.split.p_value !== null) {
        card.append(el('div', {}, `split: image − text ${(100 * report.split.difference).toFixed(1)} points, p = ${report.split.p_value.toFixed(4)}`));
      }
      return card;
    }

    function show(page) {
      state.week = page.week;
      remember();
      $('week').replaceChildren(...page.weeks.map((w) => el('option', { value: w }, w)));
      $('week').value = page.week;
      const main = $('main');
      main.replaceChildren();
      const head = el('div', { class: 'summary' });
      head.append(el('div', { class: 'card' },
        el('div', {}, el('strong', {}, page.user), ` · ${page.week} · ${page.variant || 'no variant'} · ${page.source === 'outbox' ? 'from the outbox' : 'composed now with the current templates'}`),
        page.skipped ? el('div', { class: 'notes' }, `No message: ${page.skipped}`) : '',
        page.due ? el('div', {}, `due ${page.due.at}${page.due.local ? ' (' + page.due.local + ' local)' : ''}${page.due.reason ? ' — ' + page.due.reason : ''}`) : '',
        ...Object.entries(page.outboxDiffers || {}).filter(([, d]) => d).map(([p]) => el('div', { class: 'notes' }, `${p}: the outbox holds a different message (enqueued with older templates or settings)`)),
        ...(page.outbox || []).map((o) => el('div', {}, `outbox ${o.platform}: ${o.variant}, ${o.state}${o.messageID ? ', message_id ' + o.messageID : ''}`))));
      const table = el('table', {}, el('tr', {}, el('th', {}, 'platform'), el('th', {}, 'bytes'), el('th', {}, 'budget'), el('th', {}, '')));
      for (const b of page.budgets) {
        const over = b.bytes > b.budget;
        table.append(el('tr', {}, el('td', {}, b.platform), el('td', {}, b.bytes), el('td', {}, `${b.budget} (ceiling ${b.ceiling})`),
          el('td', {}, el('div', { class: 'bar' + (over ? ' over' : '') }, el('div', { style: `width:${Math.min(100, 100 * b.bytes / b.budget).toFixed(1)}%` })))));
      }
      head.append(el('div', { class: 'card' }, el('div', {}, el('strong', {}, 'Payload bytes')), table));
      if (page.preferences) head.append(preferencesCard(page));
      head.append(el('div', { class: 'card' }, el('div', {}, el('strong', {}, 'Rules fired')),
        page.rules.length ? el('ul', {}, page.rules.map((r) => el('li', {}, el('code', {}, r)))) : el('div', {}, 'none')));
      head.append(reportCard(page));
      if (testDevices.length) head.append(sendCard(page));
      main.append(head);

      const images = [];
      for (const platform of ['android', 'ios', 'web']) {
        const surfaces = page.surfaces.filter((s) => s.platform === platform);
        if (!surfaces.length) continue;
        const row = el('div', { class: 'surfaces' });
        for (const s of surfaces) {
          const img = el('img', { src: url(s.image), width: s.width, height: s.height, alt: s.surface, 'data-decoded': 'pending' });
          images.push(img);
          const lines = s.texts.filter((t) => t.role === 'title' || t.role === 'body').map((t) =>
            el('div', { class: t.ellipsized ? 'cut' : '' }, `${t.role}: ${t.lines.length}/${t.limit} lines${t.ellipsized ? ', cut with …' : ''}`));
          row.append(el('figure', {}, img, el('figcaption', {}, el('strong', {}, s.surface), lines,
            s.notes.map((n) => el('div', { class: 'notes' }, '⚠ ' + n)))));
        }
        main.append(el('h3', {}, platform), row);
      }
      let settled = 0;
      const finish = () => {
        settled += 1;
        if (settled < images.length) return;
        const decoded = images.filter((i) => i.dataset.decoded === '1').length;
        setStatus(`${decoded}/${images.length} previews`, { state: 'done', images: images.length, decoded });
      };
      if (page.compares) compare(page);
      if (!images.length) setStatus('no previews', { state: 'done', images: 0, decoded: 0 });
      for (const img of images) {
        const settle = () => {
          img.dataset.naturalWidth = img.naturalWidth;
          img.dataset.decoded = img.complete && img.naturalWidth > 0 ? '1' : '0';
          finish();
        };
        if (img.complete) settle(); else { img.onload = settle; img.onerror = settle; }
      }
    }

    // "Send to my device": this reader's digest for the week (the outbox's message of the device's
    // provider and platform, else composed now) to one test device, marked as a test.
    function sendCard(page) {
      const picker = el('select', { id: 'test-device' }, testDevices.map((d) => {
        const option = el('option', { value: d.name }, `${d.name} · ${d.provider} ${d.platform} · ${d.target}${d.unavailable ? ' · unavailable' : ''}`);
        if (d.unavailable) { option.disabled = true; option.title = d.unavailable; }
        return option;
      }));
      const result = el('div', { id: 'test-send-result', 'data-state': 'idle' });
      const button = el('button', { type: 'button', id: 'test-send' }, 'Send to my device');
      button.onclick = async () => {
        button.disabled = true;
        result.className = '';
        result.textContent = 'sending…';
        result.dataset.state = 'sending';
        try {
          const r = await postJSON('api/test-send', { user: page.user, week: page.week, device: picker.value });
          result.textContent = `sent to ${r.device}: message_id ${r.message_id} (${r.source === 'outbox' ? 'the outbox\'s message' : 'composed now'}, ${r.variant})`;
          result.dataset.state = 'sent';
          result.dataset.messageId = r.message_id;
        } catch (error) {
          result.className = 'notes';
          result.textContent = error.message;
          result.dataset.state = 'error';
        } finally {
          button.disabled = false;
        }
      };
      return el('div', { class: 'card', id: 'send-test' }, el('div', {}, el('strong', {}, 'Send to my device')),
        el('div', {}, picker, ' ', button), result,
        el('div', { class: 'hint' }, `${page.user}'s ${page.week} digest: the outbox's message for the device's platform, else composed now; a test (kept out of every report, nothing in the outbox); at most 10 a minute per device.`));
    }

    // The reader's preferences (every key, defaults as such) and the best candidates they kept out
    // of the picks, with why ("muted: sports").
    function preferencesCard(page) {
      const p = page.preferences;
      const parts = [];
      if (p.every > 1) parts.push(`every ${p.every} weeks${p.from ? ' from ' + p.from : ''}`);
      if (p.pausedUntil) parts.push(`paused until ${p.pausedUntil}`);
      if (p.follow.length) parts.push(`follow: ${p.follow.join(', ')}`);
      if (p.mute.length) parts.push(`mute: ${p.mute.join(', ')}`);
      if (p.off) parts.push('off');
      const left = page.leftOut || [];
      return el('div', { class: 'card', id: 'preferences' }, el('div', {}, el('strong', {}, "Reader's preferences")),
        el('div', {}, parts.length ? parts.join(' · ') : 'defaults'),
        left.length ? el('div', {}, 'Left out of the picks:') : '',
        left.length ? el('ul', {}, left.map((c) => el('li', {}, `${c.title} — ${c.reason}`))) : '');
    }

    // serve --compare-templates: what the old folder changes in this reader's messages, old beside new,
    // the visible lines that differ from the other side's marked (li.changed).
    async function compare(page) {
      const section = el('div', { id: 'comparison' }, el('h3', {}, 'Template comparison: loading…'));
      $('main').append(section);
      let result;
      try {
        result = await getJSON('api/compare?' + new URLSearchParams({ user: page.user, week: page.week }));
      } catch (error) {
        section.replaceChildren(el('div', { class: 'error' }, 'template comparison: ' + error.message));
        return;
      }
      const t = result.totals;
      section.replaceChildren(el('h3', {}, `Template comparison: ${t.changed} of ${t.messages} messages change`),
        el('div', {}, `old ${result.old} → new ${result.new}; variant switches ${t.variantSwitches}, newly cut ${t.newlyCut}, no longer cut ${t.noLongerCut}, budgets newly exceeded ${t.newlyOverBudget}, rules fired differently ${t.rulesChanged}; messages shaped by the reader's preferences ${t.byPreferences}${t.skippedByPreferences ? ', skipped by their pace or pause' : ''}`));
      for (const e of result.entries) {
        section.append(el('h4', {}, `${e.platform} · ${e.locale} · ${(e.old && e.old.variant) || 'none'} → ${(e.new && e.new.variant) || 'none'}: ${e.changes.join(', ')}`));
        if (e.error) section.append(el('div', { class: 'notes' }, e.error));
        for (const [label, items] of [['newly cut', e.newlyCut], ['no longer cut', e.noLongerCut], ['rules added', e.rulesAdded], ['rules removed', e.rulesRemoved]]) {
          if (items && items.length) section.append(el('div', {}, `${label}: ${items.join(', ')}`));
        }
        for (const s of e.surfaces) {
          const row = el('div', { class: 'surfaces' });
          for (const [side, drawing, other] of [['old', s.old, s.new], ['new', s.new, s.old]]) {
            if (!drawing) continue;
            // Texts of a role pair up in order (a surface may draw several actions).
            const seen = {};
            const lists = drawing.texts.filter((t) => t.role !== 'note').map((t) => {
              const occurrence = seen[t.role] = (seen[t.role] === undefined ? 0 : seen[t.role] + 1);
              const others = ((other ? other.texts.filter((o) => o.role === t.role) : [])[occurrence] || { lines: [] }).lines;
              return el('ol', {}, t.lines.map((line, i) => el('li', { class: others[i] === line ? '' : 'changed' }, `${t.role}: ${line}`)));
            });
            row.append(el('figure', { class: side }, el('img', { src: url(drawing.image), width: drawing.width, height: drawing.height, alt: `${side}: ${s.surface}` }),
              el('figcaption', {}, el('strong', {}, `${side} · ${s.surface}`), lists)));
          }
          section.append(row);
        }
      }
    }

    $('search').onsubmit = search;
    $('week').onchange = () => { state.week = $('week').value; load(); };
    $('source').onchange = () => { state.source = $('source').value; load(); };
    $('reload').onclick = load;
    if (params.get('user')) {
      $('q').value = params.get('user');
      search();
      pick(params.get('user'));
    } else if (params.get('q') !== null) {
      $('q').value = params.get('q');
      search().then((users) => {
        const wanted = users.find((u) => u.id === params.get('q')) || users[0];
        if (wanted) pick(wanted.id);
      });
    }
    </script>
    </body>
    </html>
    """#
}
