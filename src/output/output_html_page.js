// What every script of memtrack's pages uses (src/output/output_html.c writes it first, before
// the page's own scripts): a size in binary units, text escaped for HTML, and a value of the
// URL's fragment (#name=value&...), by which a link opens the page on a given view.
'use strict';
const mtPage = Object.freeze({
	human: function human(b) {
		if (b < 0) return '-' + human(-b);
		const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
		let v = b, i = 0;
		while (v >= 1024 && i < units.length - 1) {
			v /= 1024;
			i++;
		}
		return i ? v.toFixed(1) + ' ' + units[i] : b + ' B';
	},
	escape: function (s) {
		return s.replace(/[&<>"]/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'})[c]);
	},
	param: function (k) {
		const m = new RegExp('[#&]' + k + '=([^&]*)').exec(location.hash);
		if (!m) return '';
		try {
			return decodeURIComponent(m[1]);
		} catch (e) {
			return m[1];
		}
	},
});
