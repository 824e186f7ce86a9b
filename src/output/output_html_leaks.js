// The leaks view's script (src/output/output_html_leaks.c links it into its section of the page):
// the figures grouped by three, their exact value kept in data-v, and the loss records of the
// classes chosen shown. Once drawn, the section says so in data-rendered and names the classes
// shown in data-classes (the tests read them); the page's process selector hides the rows of the
// other images itself (they carry data-image).
'use strict';
(function () {
	const box = document.getElementById('leaks');
	if (!box) return;
	box.querySelectorAll('td.num[data-v]').forEach((td) => {
		td.textContent = (+td.dataset.v).toLocaleString('en-US');
	});
	const boxes = Array.from(box.querySelectorAll('input.leak-class'));
	const shown = document.getElementById('leak-shown');
	const rows = Array.from(box.querySelectorAll('tr.loss'));
	// #leaks=definitely_lost,still_reachable in the URL's fragment chooses the classes.
	const asked = /[#&]leaks=([a-z_,]*)/.exec(location.hash);
	if (asked) boxes.forEach((b) => (b.checked = asked[1].split(',').includes(b.value)));
	function apply() {
		const on = boxes.filter((b) => b.checked).map((b) => b.value);
		let k = 0;
		for (const tr of rows) {
			const off = !on.includes(tr.dataset.class);
			tr.classList.toggle('off-class', off);
			k += !off;
		}
		shown.textContent = '(' + k + ' of ' + rows.length + ' records)';
		box.dataset.classes = on.join(',');
	}
	boxes.forEach((b) => b.addEventListener('change', apply));
	apply();
	box.dataset.rendered = '1';
})();
