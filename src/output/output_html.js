// The HTML report's script (src/output/output_html.c links it into the page): tooltips on the heap
// over time, and the flamegraph of allocation sites drawn from the data memtrack aggregated.
// No library, no network. Once drawn, each part says so in data-* attributes (the tests read
// them): the plot data-rendered, the flamegraph data-rendered, data-weight, data-total (the root's
// weight as drawn), data-focus (the frame zoomed on), data-drawn (rectangles drawn) and
// data-matched (the weight of the frames the search matches).
'use strict';
(function () {
	const data = JSON.parse(document.getElementById('mt-data').textContent);
	const SVGNS = 'http://www.w3.org/2000/svg';

	function human(b) {
		const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
		let v = b, i = 0;
		while (v >= 1024 && i < units.length - 1) {
			v /= 1024;
			i++;
		}
		return i ? v.toFixed(1) + ' ' + units[i] : b + ' B';
	}

	function exact(n) {
		return n.toLocaleString('en-US');
	}

	function time(ns) {
		if (ns >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
		if (ns >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
		if (ns >= 1e3) return (ns / 1e3).toFixed(1) + ' \u00b5s';
		return ns + ' ns';
	}

	function escape(s) {
		return s.replace(/[&<>"]/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'})[c]);
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

	// ---- the heap over time: a guide line and the exact values of the bucket under the mouse

	function overTime() {
		const svg = document.querySelector('#over-time svg');
		const ot = data.over_time;
		const tip = document.getElementById('plot-tip');
		const left = +svg.dataset.plotLeft, right = +svg.dataset.plotRight;
		const top = +svg.dataset.plotTop, bottom = +svg.dataset.plotBottom;
		const guide = svgElement('line', {y1: top, y2: bottom, stroke: '#888', 'stroke-dasharray': '3 3', visibility: 'hidden'});
		const at = (first, v, b) => (b >= first && b < first + v.length ? v[b - first] : 0);

		svg.appendChild(guide);
		svg.addEventListener('mousemove', (ev) => {
			const r = svg.getBoundingClientRect();
			const x = (ev.clientX - r.left) * (svg.viewBox.baseVal.width / r.width);
			const b = Math.floor(((x - left) / (right - left)) * ot.buckets);
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
			html += 'allocated: ' + exact(ot.allocated[b]) + ' bytes';
			showTip(tip, html, ev);
		});
		svg.addEventListener('mouseleave', () => {
			tip.hidden = true;
			guide.setAttribute('visibility', 'hidden');
		});
		svg.dataset.drawnLines = svg.querySelectorAll('polyline').length;
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
	];
	const ROW = 18;

	function flame() {
		const f = data.flame;
		const box = document.getElementById('flame');
		if (!f || !box) return;
		const nodes = f.nodes, n = nodes.length;
		const tip = document.getElementById('flame-tip');
		const name = (i) => (nodes[i][0] === -1 ? 'all' : nodes[i][0] === -2 ? '[smaller frames]' : f.names[nodes[i][0]]);
		const parent = (i) => nodes[i][1];
		const w = (i, m) => nodes[i][2 + m];
		const kids = Array.from({length: n}, () => []);
		const depth = new Array(n).fill(0);
		for (let i = 1; i < n; i++) {
			kids[parent(i)].push(i);
			depth[i] = depth[parent(i)] + 1;
		}
		for (const k of kids) k.sort((a, b) => (name(a) < name(b) ? -1 : name(a) > name(b) ? 1 : 0));

		// The URL's fragment may choose the view: #weight=bytes&focus=main&search=sqlite
		// A malformed escape (#search=100%, a link cut short) is taken as typed, not thrown:
		// decodeURIComponent's URIError would leave the page without its flamegraph.
		const param = (k) => {
			const m = new RegExp('[#&]' + k + '=([^&]*)').exec(location.hash);
			if (!m) return '';
			try {
				return decodeURIComponent(m[1]);
			} catch (e) {
				return m[1];
			}
		};
		const focus = Math.max(0, nodes.findIndex((x, i) => i && name(i) === param('focus')));
		const state = {m: Math.max(0, WEIGHTS.findIndex((x) => x[0] === param('weight'))), focus: focus, search: param('search').toLowerCase()};

		function color(i) {
			if (nodes[i][0] < 0) return '#bbb';
			if (state.search && name(i).toLowerCase().includes(state.search)) return '#e040fb';
			let h = 0;
			for (const c of name(i)) h = (h * 31 + c.charCodeAt(0)) >>> 0;
			return 'hsl(' + (h % 55) + ',75%,' + (55 + (h % 13)) + '%)';
		}

		function describe(i) {
			let html = '<b>' + escape(name(i)) + '</b><br>';
			WEIGHTS.forEach((x, m) => {
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
					const s = name(r.i);
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
			document.querySelectorAll('#flame-weights button').forEach((b, k) => b.classList.toggle('on', k === m));
			matched();
			box.dataset.weight = WEIGHTS[m][0];
			box.dataset.total = w(0, m);
			box.dataset.focus = name(state.focus);
			box.dataset.drawn = rects.length;
			box.dataset.rendered = '1';
		}

		const buttons = document.getElementById('flame-weights');
		WEIGHTS.forEach((x, m) => {
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
		document.getElementById('flame-search').value = state.search;
		document.getElementById('flame-search').addEventListener('input', (ev) => {
			state.search = ev.target.value.toLowerCase();
			render();
		});
		document.getElementById('flame-reset').addEventListener('click', () => {
			state.focus = 0;
			render();
		});
		window.addEventListener('resize', render);
		render();
	}

	overTime();
	flame();
})();
