// The HTML report's script (src/output/output_html.c links it into the page): tooltips and a time
// range on the heap over time, the process selector, the flamegraph of allocation sites and the
// bottom-up tables, drawn from the data memtrack aggregated; on the page of two runs compared
// (report --diff --html), its tables only. No library, no network. Once drawn,
// each part says so in data-* attributes (the tests read them): the plot data-rendered; the
// flamegraph data-rendered, data-weight, data-total (the root's weight as drawn), data-focus (the
// frame zoomed on), data-drawn (rectangles drawn), data-matched (the weight of the frames the
// search matches), data-totals (the root's weights, in the buttons' order: five, seven with --leaks), data-image (the image shown, -1 the whole tree) and data-range-from,
// data-range-to (the time range in ns from the run's start, whole buckets; absent: the whole run).
'use strict';
(function () {
	const {human, escape, param} = mtPage; // output_html_page.js
	const data = JSON.parse(document.getElementById('mt-data').textContent);
	const SVGNS = 'http://www.w3.org/2000/svg';
	const ot = data.over_time;

	function exact(n) {
		return n.toLocaleString('en-US');
	}

	function time(ns) {
		if (ns >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
		if (ns >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
		if (ns >= 1e3) return (ns / 1e3).toFixed(1) + ' \u00b5s';
		return ns + ' ns';
	}

	function showTip(tip, html, ev) {
		tip.innerHTML = html;
		tip.hidden = false;
		tip.style.left = ev.pageX + 14 + 'px';
		tip.style.top = ev.pageY + 14 + 'px';
	}

	function svgElement(name, attrs) {
		const e = document.createElementNS(SVGNS, name);
		for (const k in attrs) e.setAttribute(k, attrs[k]);
		return e;
	}

	// The URL's fragment may choose the view: #weight=bytes&focus=main&search=sqlite&image=2&range=10-20
	// (range in ms)&function=main (chosen in the bottom-up table). A malformed escape (#search=100%, a link cut short) is taken as typed, not
	// thrown: decodeURIComponent's URIError would leave the page without its flamegraph.
	// ---- the view: one image or the whole tree; the whole run or buckets [b0, b1)

	const view = {image: -1, range: null, listeners: []};

	function changed() {
		for (const f of view.listeners) f();
	}

	// A range in ns, widened to whole buckets: the sums in it are then exact.
	function setRange(fromNs, toNs) {
		const b0 = Math.max(0, Math.floor(Math.min(fromNs, toNs) / ot.bucket_ns));
		const b1 = Math.min(ot.buckets, Math.ceil(Math.max(fromNs, toNs) / ot.bucket_ns));
		view.range = b1 > b0 ? [b0, b1] : null;
		changed();
	}

	function viewControls() {
		const select = document.getElementById('image-select');
		const from = document.getElementById('range-from'), to = document.getElementById('range-to');
		const shown = document.getElementById('range-shown');
		if (!select) return;
		(data.images || []).forEach((g, k) => {
			const o = document.createElement('option');
			o.value = k;
			o.textContent = 'pid ' + g[0] + ' ' + g[1] + (g[2] ? ' (' + g[2] + ')' : '') + (g[3] ? ', exec ' + g[3] : '');
			select.appendChild(o);
		});
		select.addEventListener('change', () => {
			view.image = +select.value;
			changed();
		});
		const typed = () => from.value !== '' && to.value !== '' && setRange(from.value * 1e6, to.value * 1e6);
		from.addEventListener('change', typed);
		to.addEventListener('change', typed);
		document.getElementById('range-clear').addEventListener('click', () => {
			view.range = null;
			changed();
		});
		view.listeners.push(() => {
			select.value = view.image;
			if (!view.range) {
				shown.textContent = 'whole run, ' + time(ot.buckets * ot.bucket_ns);
				return;
			}
			from.value = (view.range[0] * ot.bucket_ns) / 1e6;
			to.value = (view.range[1] * ot.bucket_ns) / 1e6;
			shown.textContent = time(view.range[0] * ot.bucket_ns) + ' to ' + time(view.range[1] * ot.bucket_ns) + ' (whole buckets of ' + time(ot.bucket_ns) + ')';
		});
		const image = parseInt(param('image'), 10);
		if (image >= 0 && image < (data.images || []).length) view.image = image;
		const r = /^([0-9.]+)-([0-9.]+)$/.exec(param('range'));
		if (r) setRange(r[1] * 1e6, r[2] * 1e6);
	}

	// ---- the heap over time: a guide line and the exact values of the bucket under the mouse; a
	// drag selects a time range

	function overTime() {
		const svg = document.querySelector('#over-time svg');
		if (!svg) return;
		const tip = document.getElementById('plot-tip');
		const left = +svg.dataset.plotLeft, right = +svg.dataset.plotRight;
		const top = +svg.dataset.plotTop, bottom = +svg.dataset.plotBottom;
		const guide = svgElement('line', {y1: top, y2: bottom, stroke: '#888', 'stroke-dasharray': '3 3', visibility: 'hidden'});
		const band = svgElement('rect', {y: top, height: bottom - top, fill: '#3070ff', opacity: 0.15, visibility: 'hidden'});
		const at = (first, v, b) => (b >= first && b < first + v.length ? v[b - first] : 0);
		const bucketAt = (ev) => {
			const r = svg.getBoundingClientRect();
			const x = (ev.clientX - r.left) * (svg.viewBox.baseVal.width / r.width);
			return Math.floor(((x - left) / (right - left)) * ot.buckets);
		};
		const xOf = (b) => left + (b * (right - left)) / ot.buckets;
		const showBand = (b0, b1) => {
			band.setAttribute('x', xOf(b0));
			band.setAttribute('width', Math.max(1, xOf(b1) - xOf(b0)));
			band.setAttribute('visibility', 'visible');
		};
		let dragFrom = null;

		svg.appendChild(band);
		svg.appendChild(guide);
		svg.style.cursor = 'crosshair';
		svg.addEventListener('mousedown', (ev) => {
			dragFrom = Math.min(Math.max(bucketAt(ev), 0), ot.buckets - 1);
			ev.preventDefault();
		});
		window.addEventListener('mouseup', (ev) => {
			if (dragFrom === null) return;
			const b = Math.min(Math.max(bucketAt(ev), 0), ot.buckets - 1);
			setRange(Math.min(b, dragFrom) * ot.bucket_ns, (Math.max(b, dragFrom) + 1) * ot.bucket_ns);
			dragFrom = null;
		});
		svg.addEventListener('mousemove', (ev) => {
			const b = bucketAt(ev);
			if (dragFrom !== null) showBand(Math.min(b, dragFrom), Math.max(b, dragFrom) + 1);
			if (b < 0 || b >= ot.buckets) {
				tip.hidden = true;
				guide.setAttribute('visibility', 'hidden');
				return;
			}
			const gx = left + ((b + 0.5) * (right - left)) / ot.buckets;
			guide.setAttribute('x1', gx);
			guide.setAttribute('x2', gx);
			guide.setAttribute('visibility', 'visible');
			let html = time(b * ot.bucket_ns) + ' to ' + time((b + 1) * ot.bucket_ns) + '<br>';
			html += '<b>whole tree: ' + exact(at(0, ot.tree, b)) + ' bytes live at most</b><br>';
			for (const l of ot.lines) html += escape(l.label) + ': ' + exact(at(l.first, l.max, b)) + ' bytes<br>';
			if (ot.rss) {
				html += '<b>whole tree RSS: ' + exact(at(ot.rss.tree_first, ot.rss.tree, b)) + ' bytes resident at most</b><br>';
				for (const l of ot.rss.lines) html += escape(l.label) + ' RSS: ' + exact(at(l.first, l.max, b)) + ' bytes<br>';
			}
			html += 'allocated: ' + exact(ot.allocated[b]) + ' bytes<br>';
			if (ot.mapped) {
				const m = ot.mapped, mb = Math.floor((b * ot.bucket_ns) / m.bucket_ns);
				html += 'mapped beyond the heap (mmap, brk): ' + exact(at(m.first, m.max, mb)) + ' bytes<br>';
			}
			html += '(drag to choose a time range)';
			showTip(tip, html, ev);
		});
		svg.addEventListener('mouseleave', () => {
			tip.hidden = true;
			guide.setAttribute('visibility', 'hidden');
		});
		view.listeners.push(() => (view.range ? showBand(view.range[0], view.range[1]) : band.setAttribute('visibility', 'hidden')));
		svg.dataset.drawnLines = svg.querySelectorAll('polyline').length;
		svg.dataset.drawnRss = svg.querySelectorAll('path.rss, path.rss-tree').length;
		svg.dataset.drawnPeak = ot.tree.reduce((a, v) => Math.max(a, v), 0);
		svg.dataset.rendered = '1';
	}

	// ---- the flamegraph: root at the top, callees below, widths by the chosen weight

	const WEIGHTS = [
		['allocations', 'allocations', (v) => exact(v)],
		['bytes', 'bytes allocated', (v) => exact(v) + ' bytes (' + human(v) + ')'],
		['live', 'live at exit', (v) => exact(v) + ' bytes (' + human(v) + ')'],
		['peak', 'live at the peak', (v) => exact(v) + ' bytes (' + human(v) + ')'],
		['temporary', 'temporary', (v) => exact(v)],
		['definite', 'definitely lost', (v) => exact(v) + ' bytes (' + human(v) + ')'],
		['indirect', 'indirectly lost', (v) => exact(v) + ' bytes (' + human(v) + ')'],
	];
	// The two lost classes are weights of a run with --leaks only (data.leaks, its loss records).
	const LOST = 5;
	const NW = (data.leaks ? WEIGHTS.length : LOST);
	// A time range has allocations and bytes; the other weights are of the whole run.
	const IN_RANGE = 2;
	const ROW = 18;

	// Each node's weights for the view: the cells of the image (every cell for the tree), their
	// allocations in the range's buckets, summed up the tree (a parent comes before its children).
	function viewWeights(nodes, cells) {
		const W = nodes.map(() => new Array(NW).fill(0));
		for (const c of cells) {
			if (view.image >= 0 && c[1] !== view.image) continue;
			const t = W[c[0]];
			if (!view.range) {
				for (let m = 0; m < 5; m++) t[m] += c[2 + m];
				continue;
			}
			const s = c[7];
			for (let k = 0, b = 0; k < s.length; k += 3) {
				b += s[k];
				if (b >= view.range[0] && b < view.range[1]) {
					t[0] += s[k + 1];
					t[1] += s[k + 2];
				}
			}
		}
		for (const l of view.range ? [] : data.leaks || []) {
			if (view.image >= 0 && l[1] !== view.image) continue;
			W[l[0]][LOST] += l[2];
			W[l[0]][LOST + 1] += l[3];
		}
		for (let i = nodes.length - 1; i > 0; i--) for (let m = 0; m < NW; m++) W[nodes[i][1]][m] += W[i][m];
		return W;
	}

	function flame() {
		const f = data.flame;
		const box = document.getElementById('flame');
		if (!f || !box) return null;
		const nodes = f.nodes, n = nodes.length;
		const tip = document.getElementById('flame-tip');
		const name = (i) => (nodes[i][0] === -1 ? 'all' : nodes[i][0] === -2 ? '[smaller frames]' : f.names[nodes[i][0]]);
		// A frame's label: C++'s template arguments shortened; the tip has the whole name.
		const label = (i) => (f.short && f.short[nodes[i][0]]) || name(i);
		const parent = (i) => nodes[i][1];
		let W = viewWeights(nodes, data.cells);
		const w = (i, m) => W[i][m];
		const kids = Array.from({length: n}, () => []);
		const depth = new Array(n).fill(0);
		for (let i = 1; i < n; i++) {
			kids[parent(i)].push(i);
			depth[i] = depth[parent(i)] + 1;
		}
		for (const k of kids) k.sort((a, b) => (name(a) < name(b) ? -1 : name(a) > name(b) ? 1 : 0));

		const focus = Math.max(0, nodes.findIndex((x, i) => i && name(i) === param('focus')));
		const state = {m: Math.max(0, WEIGHTS.slice(0, NW).findIndex((x) => x[0] === param('weight'))), focus: focus, search: param('search').toLowerCase()};

		function color(i) {
			if (nodes[i][0] < 0) return '#bbb';
			if (state.search && name(i).toLowerCase().includes(state.search)) return '#e040fb';
			let h = 0;
			for (const c of name(i)) h = (h * 31 + c.charCodeAt(0)) >>> 0;
			return 'hsl(' + (h % 55) + ',75%,' + (55 + (h % 13)) + '%)';
		}

		function describe(i) {
			let html = '<b>' + escape(name(i)) + '</b><br>';
			WEIGHTS.slice(0, NW).forEach((x, m) => {
				if (view.range && m >= IN_RANGE) return;
				const pct = w(0, m) ? ((100 * w(i, m)) / w(0, m)).toFixed(2) : '0.00';
				html += x[1] + ': ' + x[2](w(i, m)) + ', ' + pct + '%<br>';
			});
			return html;
		}

		function matched() {
			const out = document.getElementById('flame-match');
			if (!state.search) {
				out.textContent = '';
				delete box.dataset.matched;
				return;
			}
			let sum = 0;
			const hit = (i) => name(i).toLowerCase().includes(state.search);
			(function walk(i) {
				if (i && hit(i)) {
					sum += w(i, state.m);
					return;
				}
				for (const k of kids[i]) walk(k);
			})(0);
			const total = w(0, state.m);
			out.textContent = 'matched: ' + exact(sum) + ' of ' + exact(total) + ' (' + (total ? ((100 * sum) / total).toFixed(2) : '0.00') + '%)';
			box.dataset.matched = sum;
		}

		function render() {
			const m = state.m, width = box.clientWidth || 1000;
			const fw = w(state.focus, m);
			const rects = [];
			const chain = [];
			for (let i = state.focus; ; i = parent(i)) {
				chain.unshift(i);
				if (i === 0) break;
			}
			for (const i of chain) rects.push({i: i, x: 0, width: width, ancestor: i !== state.focus});
			(function lay(i, x) {
				for (const k of kids[i]) {
					const kw = fw ? (width * w(k, m)) / fw : 0;
					if (kw >= 0.5) {
						rects.push({i: k, x: x, width: kw, ancestor: false});
						lay(k, x);
					}
					x += kw;
				}
			})(state.focus, 0);
			// The picture is as tall as what can be seen: a tower of frames narrower than
			// three pixels (one deep recursion of one tiny site) does not make the page
			// thousands of pixels tall; clicking a frame above it shows it.
			const seen = rects.filter((r) => r.width >= 3 || r.ancestor);
			const rows = seen.reduce((a, r) => Math.max(a, depth[r.i]), 0) + 1;
			rects.splice(0, rects.length, ...rects.filter((r) => depth[r.i] < rows));
			const svg = svgElement('svg', {width: width, height: rows * ROW, viewBox: '0 0 ' + width + ' ' + rows * ROW});
			for (const r of rects) {
				const g = svgElement('g', {class: r.ancestor ? 'ancestor' : 'frame', 'data-name': name(r.i), 'data-value': w(r.i, m)});
				g.appendChild(svgElement('rect', {x: r.x, y: depth[r.i] * ROW, width: r.width, height: ROW - 1, fill: color(r.i)}));
				if (r.width > 30) {
					const chars = Math.floor((r.width - 6) / 6.6);
					const s = label(r.i);
					const t = svgElement('text', {x: r.x + 3, y: depth[r.i] * ROW + 13});
					t.textContent = s.length > chars ? s.slice(0, Math.max(0, chars - 2)) + '..' : s;
					g.appendChild(t);
				}
				g.addEventListener('click', () => {
					state.focus = r.i;
					render();
				});
				g.addEventListener('mousemove', (ev) => showTip(tip, describe(r.i), ev));
				g.addEventListener('mouseleave', () => (tip.hidden = true));
				svg.appendChild(g);
			}
			box.replaceChildren(svg);
			document.querySelectorAll('#flame-weights button').forEach((b, k) => {
				b.classList.toggle('on', k === m);
				b.disabled = !!view.range && k >= IN_RANGE;
			});
			matched();
			box.dataset.weight = WEIGHTS[m][0];
			box.dataset.total = w(0, m);
			box.dataset.totals = W[0].join(',');
			box.dataset.focus = name(state.focus);
			box.dataset.drawn = rects.length;
			box.dataset.image = view.image;
			if (view.range) {
				box.dataset.rangeFrom = view.range[0] * ot.bucket_ns;
				box.dataset.rangeTo = view.range[1] * ot.bucket_ns;
			} else {
				delete box.dataset.rangeFrom;
				delete box.dataset.rangeTo;
			}
			box.dataset.rendered = '1';
		}

		const buttons = document.getElementById('flame-weights');
		WEIGHTS.slice(0, NW).forEach((x, m) => {
			const b = document.createElement('button');
			b.type = 'button';
			b.textContent = x[1];
			b.addEventListener('click', () => {
				state.m = m;
				if (!w(state.focus, m)) state.focus = 0;
				render();
			});
			buttons.appendChild(b);
		});
		const search = document.getElementById('flame-search');
		search.value = state.search;
		search.addEventListener('input', (ev) => {
			state.search = ev.target.value.toLowerCase();
			render();
		});
		document.getElementById('flame-reset').addEventListener('click', () => {
			state.focus = 0;
			render();
		});
		window.addEventListener('resize', render);
		view.listeners.push(() => {
			W = viewWeights(nodes, data.cells);
			if (view.range && state.m >= IN_RANGE) state.m = 1;
			if (!w(state.focus, state.m)) state.focus = 0;
			render();
		});
		// A function chosen in a table: its frames highlighted, matched and summed.
		return (fn) => {
			state.search = search.value = fn.toLowerCase();
			render();
		};
	}

	// ---- the tables: numbers formatted, columns sorted by a click, rows searched, functions
	// chosen (their callers and callees shown, their frames searched in the flamegraph)

	function tables(searchFlame) {
		// Cells with a title of their own (a change: both values) keep it.
		document.querySelectorAll('table.calls td.num').forEach((td) => {
			const v = +td.dataset.v;
			const sign = td.classList.contains('delta') && v > 0 ? '+' : '';
			td.textContent = sign + (td.classList.contains('bytes') ? human(v) : exact(v));
			if (!td.title) td.title = exact(v) + (td.classList.contains('bytes') ? ' bytes' : '');
		});
		document.querySelectorAll('table.calls th').forEach((th) => {
			const col = th.cellIndex;
			th.addEventListener('click', () => {
				const body = th.closest('table').tBodies[0];
				const key = (tr) => (th.dataset.sort === 'num' ? -tr.cells[col].dataset.v : tr.cells[col].textContent);
				const rows = Array.from(body.rows).sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
				body.replaceChildren(...rows);
			});
		});
		const input = document.getElementById('calls-search');
		const top = document.getElementById('bottom-up');
		if (!input || !top) return;
		const shown = document.getElementById('calls-shown');
		const filter = () => {
			const s = input.value.toLowerCase();
			let k = 0;
			for (const tr of top.tBodies[0].rows) {
				tr.hidden = !!s && !tr.cells[0].textContent.toLowerCase().includes(s);
				k += !tr.hidden;
			}
			shown.textContent = k + ' of ' + top.tBodies[0].rows.length + ' functions';
		};
		input.addEventListener('input', filter);
		filter();
		const choose = (fn) => {
			document.querySelectorAll('.calls-of').forEach((d) => (d.hidden = d.dataset.function !== fn));
			if (searchFlame) searchFlame(fn);
		};
		document.querySelectorAll('button.fn').forEach((b) => b.addEventListener('click', () => choose(b.dataset.function)));
		if (param('function')) choose(param('function'));
	}

	// The largest blocks of the image shown.
	view.listeners.push(() => {
		document.querySelectorAll('tr[data-image]').forEach((tr) => (tr.hidden = view.image >= 0 && +tr.dataset.image !== view.image));
	});

	// ---- benchmarks (an artifact of memtrack bench: output_html_bench.c's table and data): a
	// benchmark chosen (its button, or #bench=NAME, its URI or its row's index) makes its window
	// the view's time range, in whole buckets as a drag makes it, and its own heap over time is
	// drawn. Says what it drew: #benchmarks data-rendered and data-selected (the row's index,
	// absent: none); #bench-shown the chosen one's figures in data-*; #bench-plot data-points and
	// data-peak (its largest live bytes above the heap at the window's start).

	function benchmarks() {
		const el = document.getElementById('mt-bench');
		const section = document.getElementById('benchmarks');
		if (!el || !section) return;
		const list = JSON.parse(el.textContent).benchmarks;
		const shown = document.getElementById('bench-shown');
		const plot = document.getElementById('bench-plot');
		let selected = -1;
		// The buckets setRange makes of a window: the test of whether the view is still its.
		const bucketsOf = (b) => [Math.max(0, Math.floor(b.from_ns / ot.bucket_ns)), Math.min(ot.buckets, Math.ceil(Math.max(b.to_ns, b.from_ns + 1) / ot.bucket_ns))];

		function draw(b) {
			const W = 600, H = 140, L = 70, B = 20;
			const t1 = Math.max(1, b.timeline.length ? b.timeline[b.timeline.length - 1][0] : 1);
			const top = b.timeline.reduce((a, p) => Math.max(a, p[1] - b.heap_at_start), 0);
			const x = (t) => L + (t * (W - L - 10)) / t1;
			const y = (v) => H - B - ((v - b.heap_at_start) * (H - B - 10)) / Math.max(1, top);
			const svg = svgElement('svg', {class: 'bench-over-time', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H});
			// A step line: the heap holds each point's value until the next one.
			let pts = '';
			b.timeline.forEach((p, i) => {
				if (i) pts += x(p[0]) + ',' + y(b.timeline[i - 1][1]) + ' ';
				pts += x(p[0]) + ',' + y(p[1]) + ' ';
			});
			svg.appendChild(svgElement('line', {x1: L, y1: H - B, x2: W - 10, y2: H - B, stroke: '#999'}));
			svg.appendChild(svgElement('polyline', {points: pts.trim(), fill: 'none', stroke: '#3070ff', 'stroke-width': 1.5}));
			const label = (tx, ty, text, anchor) => {
				const t = svgElement('text', {x: tx, y: ty, 'text-anchor': anchor || 'start'});
				t.textContent = text;
				svg.appendChild(t);
			};
			label(L - 4, y(b.heap_at_start + top) + 4, '+' + human(top), 'end');
			label(L - 4, H - B + 4, human(b.heap_at_start), 'end');
			label(L, H - 4, '0');
			label(W - 10, H - 4, time(t1), 'end');
			plot.replaceChildren(svg);
			plot.dataset.points = b.timeline.length;
			plot.dataset.peak = top;
		}

		function show() {
			document.querySelectorAll('#bench-table tr.bench').forEach((tr) => tr.classList.toggle('on', +tr.dataset.bench === selected));
			if (selected < 0) {
				delete section.dataset.selected;
				shown.textContent = 'No benchmark chosen: the view is ' + (view.range ? 'a time range of its own.' : 'the whole run.');
				plot.replaceChildren();
				delete plot.dataset.points;
				delete plot.dataset.peak;
				return;
			}
			const b = list[selected];
			section.dataset.selected = selected;
			shown.dataset.name = b.name;
			shown.dataset.allocations = b.allocations;
			shown.dataset.bytesAllocated = b.bytes_allocated;
			shown.dataset.peakBytes = b.peak_bytes;
			shown.dataset.liveAtEnd = b.live_at_end;
			shown.innerHTML =
				'<b>' + escape(b.name) + '</b>' + (b.uri ? ' (' + escape(b.uri) + ')' : '') + ': ' + exact(b.allocations) + ' allocations, ' + exact(b.bytes_allocated) + ' bytes allocated, peak ' + exact(b.peak_bytes) + ' bytes above the ' + exact(b.heap_at_start) +
				' live at its start, ' + exact(b.live_at_end) + ' bytes live at its end; its window ' + time(b.from_ns) + ' to ' + time(b.to_ns) + (b.closed ? '' : ' (never closed)') + '. The band on the heap over time and the flamegraph below are the whole tree\'s in that window.';
			draw(b);
		}

		function choose(k) {
			selected = k;
			setRange(list[k].from_ns, Math.max(list[k].to_ns, list[k].from_ns + 1));
		}

		document.querySelectorAll('#bench-table button.bench-pick').forEach((btn) => btn.addEventListener('click', () => choose(+btn.dataset.bench)));
		view.listeners.push(() => {
			if (selected >= 0) {
				const r = bucketsOf(list[selected]);
				if (!view.range || view.range[0] !== r[0] || view.range[1] !== r[1]) selected = -1;
			}
			show();
		});
		const want = param('bench');
		let k = list.findIndex((b) => b.name === want || (b.uri && b.uri === want));
		if (k < 0 && /^[0-9]+$/.test(want) && +want < list.length) k = +want;
		if (k >= 0) choose(k);
		section.dataset.rendered = '1';
	}

	overTime();
	const searchFlame = flame();
	tables(searchFlame);
	viewControls();
	benchmarks();
	changed();
})();
