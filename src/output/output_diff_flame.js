// The differential flamegraph's script (src/output/output_diff_flame.c links it into its section
// of the comparison's page): the sites of both runs merged into one tree by frame name, drawn as
// the new run's flamegraph (root at the top, widths by the new run's weight) with each frame
// colored by its change against the base run, as Brendan Gregg's differential flamegraphs are:
// red grown, blue shrunk; or, as his second picture, the base run's widths with the same colors,
// where what the new run no longer does shows (blue); the saturation the change over the largest change of a frame under
// that weight. A frame is colored by its whole weight's change, its callees' included: a frame
// allocates through the allocator beneath it, so its own part is always nothing. Once drawn, the
// box says so in data-* attributes (the tests read them): data-rendered, data-weight,
// data-widths (new or base), data-total-new and data-total-base (the root's), data-focus and
// data-drawn; each frame's <g> has data-name, data-new, data-base and data-change.
// #weight=bytes&focus=main&widths=base in the URL's fragment chooses the view, as on the
// report's page.
'use strict';
(function () {
	const {human, escape, param} = mtPage; // output_html_page.js
	const box = document.getElementById('diff-flame-box');
	const holder = document.getElementById('diff-flame-data');
	if (!box || !holder) return;
	const data = JSON.parse(holder.textContent);
	const SVGNS = 'http://www.w3.org/2000/svg';
	const ROW = 18;
	const BYTES = {bytes: true, peak: true, live: true};
	const tip = document.getElementById('diff-flame-tip');

	// The tree: node 0 the root; each node its name, parent, children and both runs' weights.
	const nodes = [{name: 'all', parent: -1, kids: new Map(), base: new Array(data.metrics.length).fill(0), now: new Array(data.metrics.length).fill(0), depth: 0}];
	for (const [path, base, now] of data.sites) {
		let at = 0;
		const add = (i) => {
			for (let m = 0; m < base.length; m++) {
				nodes[i].base[m] += base[m];
				nodes[i].now[m] += now[m];
			}
		};
		add(0);
		for (const name of path.map((k) => data.names[k])) {
			let k = nodes[at].kids.get(name);
			if (k === undefined) {
				k = nodes.length;
				nodes.push({name: name, parent: at, kids: new Map(), base: new Array(base.length).fill(0), now: new Array(base.length).fill(0), depth: nodes[at].depth + 1});
				nodes[at].kids.set(name, k);
			}
			add(k);
			at = k;
		}
	}
	const kids = nodes.map((n) => Array.from(n.kids.entries()).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map((e) => e[1]));
	const found = nodes.findIndex((n, i) => i && n.name === param('focus'));
	const state = {m: Math.max(0, data.metrics.indexOf(param('weight') || 'bytes')), focus: Math.max(0, found), side: param('widths') === 'base' ? 'base' : 'now'};

	function value(m, v) {
		return BYTES[data.metrics[m]] ? v.toLocaleString('en-US') + ' bytes (' + human(v) + ')' : v.toLocaleString('en-US');
	}

	// White unchanged; red or blue, deeper as the change nears the largest one.
	function color(i, most) {
		const d = nodes[i].now[state.m] - nodes[i].base[state.m];
		if (!d || !most) return 'hsl(0,0%,97%)';
		const t = Math.min(1, Math.abs(d) / most);
		return 'hsl(' + (d > 0 ? 0 : 220) + ',85%,' + Math.round(92 - 42 * t) + '%)';
	}

	function describe(i) {
		const m = state.m, n = nodes[i], d = n.now[m] - n.base[m];
		const pct = n.base[m] ? ((100 * d) / n.base[m]).toFixed(1) + '%' : n.now[m] ? 'new' : '0%';
		return '<b>' + escape(n.name) + '</b><br>' + data.metrics[m] + ': ' + value(m, n.now[m]) + ' (base ' + value(m, n.base[m]) + ')<br>change: ' + (d > 0 ? '+' : '') + value(m, d) + ', ' + (d > 0 && n.base[m] ? '+' : '') + pct;
	}

	function render() {
		const m = state.m, width = box.clientWidth || 1000;
		const side = state.side;
		const fw = nodes[state.focus][side][m];
		const rects = [];
		for (let i = state.focus; i >= 0; i = nodes[i].parent) rects.push({i: i, x: 0, width: width, ancestor: i !== state.focus});
		(function lay(i, x) {
			for (const k of kids[i]) {
				const kw = fw ? (width * nodes[k][side][m]) / fw : 0;
				if (kw >= 0.5) {
					rects.push({i: k, x: x, width: kw, ancestor: false});
					lay(k, x);
				}
				x += kw;
			}
		})(state.focus, 0);
		const most = rects.reduce((a, r) => (r.i ? Math.max(a, Math.abs(nodes[r.i].now[m] - nodes[r.i].base[m])) : a), 0);
		const rows = rects.reduce((a, r) => Math.max(a, nodes[r.i].depth), 0) + 1;
		const svg = document.createElementNS(SVGNS, 'svg');
		svg.setAttribute('width', width);
		svg.setAttribute('height', rows * ROW);
		svg.setAttribute('viewBox', '0 0 ' + width + ' ' + rows * ROW);
		for (const r of rects) {
			const n = nodes[r.i];
			const g = document.createElementNS(SVGNS, 'g');
			g.setAttribute('class', r.ancestor ? 'ancestor' : 'frame');
			g.dataset.name = n.name;
			g.dataset.new = n.now[m];
			g.dataset.base = n.base[m];
			g.dataset.change = n.now[m] - n.base[m];
			const rect = document.createElementNS(SVGNS, 'rect');
			const fill = color(r.i, most);
			rect.setAttribute('x', r.x);
			rect.setAttribute('y', n.depth * ROW);
			rect.setAttribute('width', r.width);
			rect.setAttribute('height', ROW - 1);
			rect.setAttribute('fill', fill);
			g.dataset.fill = fill;
			g.appendChild(rect);
			if (r.width > 30) {
				const chars = Math.floor((r.width - 6) / 6.6);
				const t = document.createElementNS(SVGNS, 'text');
				t.setAttribute('x', r.x + 3);
				t.setAttribute('y', n.depth * ROW + 13);
				t.textContent = n.name.length > chars ? n.name.slice(0, Math.max(0, chars - 2)) + '..' : n.name;
				g.appendChild(t);
			}
			g.addEventListener('click', () => {
				state.focus = r.i;
				render();
			});
			g.addEventListener('mousemove', (ev) => {
				tip.innerHTML = describe(r.i);
				tip.hidden = false;
				tip.style.left = ev.pageX + 14 + 'px';
				tip.style.top = ev.pageY + 14 + 'px';
			});
			g.addEventListener('mouseleave', () => (tip.hidden = true));
			svg.appendChild(g);
		}
		box.replaceChildren(svg);
		document.querySelectorAll('#diff-flame-weights button').forEach((b, k) => b.classList.toggle('on', k === m));
		const root = nodes[0], d = root.now[m] - root.base[m];
		document.getElementById('diff-flame-total').textContent = 'new ' + value(m, root.now[m]) + ', base ' + value(m, root.base[m]) + ', change ' + (d > 0 ? '+' : '') + value(m, d);
		box.dataset.weight = data.metrics[m];
		box.dataset.widths = side === 'now' ? 'new' : 'base';
		document.querySelectorAll('#diff-flame-sides button').forEach((b) => b.classList.toggle('on', b.dataset.side === side));
		box.dataset.totalNew = root.now[m];
		box.dataset.totalBase = root.base[m];
		box.dataset.focus = nodes[state.focus].name;
		box.dataset.drawn = rects.length;
		box.dataset.rendered = '1';
	}

	const buttons = document.getElementById('diff-flame-weights');
	data.metrics.forEach((name, m) => {
		const b = document.createElement('button');
		b.type = 'button';
		b.textContent = name;
		b.addEventListener('click', () => {
			state.m = m;
			if (!nodes[state.focus][state.side][m]) state.focus = 0;
			render();
		});
		buttons.appendChild(b);
	});
	document.querySelectorAll('#diff-flame-sides button').forEach((b) =>
		b.addEventListener('click', () => {
			state.side = b.dataset.side;
			if (!nodes[state.focus][state.side][state.m]) state.focus = 0;
			render();
		})
	);
	document.getElementById('diff-flame-reset').addEventListener('click', () => {
		state.focus = 0;
		render();
	});
	window.addEventListener('resize', render);
	render();
})();
