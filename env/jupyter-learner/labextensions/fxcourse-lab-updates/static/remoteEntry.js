// The browser half of fxcourse/lab_updates.py (its docstring says how the two work together):
// course updates merged into the notebooks open in this tab, with what the learner typed kept.
//
// Written by hand, not built: JupyterLab loads a prebuilt ("federated") extension by running
// this script, which registers a module container in window._JUPYTERLAB under the package's
// name, then asks it for "./extension" (package.json). This plugin imports no shared module:
// it uses only the application object JupyterLab hands to activate().
(function () {
  'use strict';

  const NAME = 'fxcourse-lab-updates';
  const POLL_MS = 2000; // while the tab is hidden, the browser runs it less often
  const ATTEMPTS = 5; // merges retried when the learner typed while one was on its way

  // A cell's metadata without the lab's own "trusted" flag (never saved in the file).
  function savedMetadata(cell) {
    const metadata = { ...cell.getMetadata() };
    delete metadata.trusted;
    return metadata;
  }

  // The open document as the server's merge reads it: cells without outputs, matched by id.
  function documentOf(model) {
    const shared = model.sharedModel;
    return {
      metadata: shared.getMetadata(),
      cells: shared.cells.map((cell) => {
        const entry = {
          id: cell.getId(),
          cell_type: cell.cell_type,
          source: cell.getSource(),
          metadata: savedMetadata(cell)
        };
        if (cell.cell_type !== 'code' && cell.getAttachments && cell.getAttachments()) {
          entry.attachments = cell.getAttachments();
        }
        return entry;
      })
    };
  }

  // Make the notebook hold `cells` (the server's answer), touching only what differs: a cell
  // whose text is unchanged keeps its outputs, its editor and the learner's cursor.
  function apply(model, cells) {
    const shared = model.sharedModel;
    const wanted = new Map(cells.map((cell) => [cell.id, cell]));
    for (let i = shared.cells.length - 1; i >= 0; i--) {
      const target = wanted.get(shared.cells[i].getId());
      if (!target || target.cell_type !== shared.cells[i].cell_type) {
        shared.deleteCell(i);
      }
    }
    cells.forEach((target, index) => {
      const at = shared.cells.findIndex((cell) => cell.getId() === target.id);
      if (at < 0) {
        shared.insertCell(index, target);
        return;
      }
      if (at !== index) {
        shared.moveCell(at, index);
      }
      const cell = shared.cells[index];
      if (cell.getSource() !== target.source) {
        cell.setSource(target.source); // the course's text: the old outputs were not its
        if (cell.cell_type === 'code') {
          cell.setOutputs([]);
          cell.execution_count = null;
        }
      }
      if (JSON.stringify(savedMetadata(cell)) !== JSON.stringify(target.metadata)) {
        const trusted = cell.getMetadata().trusted;
        cell.setMetadata(trusted === undefined ? target.metadata : { ...target.metadata, trusted });
      }
    });
  }

  class Updates {
    constructor(app) {
      this.app = app;
      this.settings = app.serviceManager.serverSettings;
      this.frontend = Math.random().toString(16).slice(2) + Date.now().toString(16);
      this.delivering = new Set();
      this.polling = false;
      this.timer = null;
    }

    start() {
      document.addEventListener('visibilitychange', () => {
        if (!document.hidden) {
          void this.poll();
        }
      });
      // A closed or reloaded tab no longer has its notebooks open.
      window.addEventListener('pagehide', () => {
        this.request('fxcourse/lab/frontends', { frontend: this.frontend, leaving: true }, true)
          .catch(() => undefined);
      });
      void this.poll();
    }

    notebooks() {
      const found = [];
      for (const widget of this.app.shell.widgets('main')) {
        const model = widget.content && widget.content.model;
        const shared = model && model.sharedModel;
        if (widget.context && shared && Array.isArray(shared.cells)) {
          found.push(widget);
        }
      }
      return found;
    }

    async poll() {
      if (this.polling) {
        return;
      }
      this.polling = true;
      clearTimeout(this.timer);
      try {
        const open = this.notebooks();
        const paths = open.map((widget) => widget.context.path);
        const reply = await this.request('fxcourse/lab/frontends', {
          frontend: this.frontend,
          open: paths
        });
        for (const path of reply.updates || []) {
          const widget = open.find((candidate) => candidate.context.path === path);
          if (widget && !widget.isDisposed) {
            await this.deliver(widget);
          }
        }
      } catch (error) {
        console.warn(`${NAME}:`, error);
      } finally {
        this.polling = false;
        this.timer = setTimeout(() => void this.poll(), POLL_MS);
      }
    }

    async deliver(widget) {
      const context = widget.context;
      const path = context.path;
      if (this.delivering.has(path)) {
        return;
      }
      this.delivering.add(path);
      try {
        await context.ready;
        const model = widget.content.model;
        for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
          const sent = JSON.stringify(documentOf(model));
          const reply = await this.request('fxcourse/lab/merge', {
            path,
            notebook: JSON.parse(sent),
            frontend: this.frontend
          });
          if (!reply.token) {
            return; // nothing waiting any more, or another tab of the notebook takes it
          }
          if (JSON.stringify(documentOf(model)) !== sent) {
            continue; // the learner typed meanwhile: merge into what is there now
          }
          if (reply.cells) {
            apply(model, reply.cells);
            await context.save();
          }
          await this.request('fxcourse/lab/merged', { token: reply.token });
          if (reply.message) {
            this.notify(reply.message);
          }
          return;
        }
      } finally {
        this.delivering.delete(path);
      }
    }

    notify(message) {
      this.app.commands
        .execute('apputils:notify', { message, type: 'success', options: { autoClose: 15000 } })
        .catch((error) => console.warn(`${NAME}:`, error));
    }

    // A request as JupyterLab's own make them: the token, and the _xsrf cookie as a header.
    async request(path, body, keepalive = false) {
      const headers = { 'Content-Type': 'application/json' };
      if (this.settings.token) {
        headers.Authorization = `token ${this.settings.token}`;
      }
      const xsrf = document.cookie.match('\\b_xsrf=([^;]*)\\b');
      if (xsrf) {
        headers['X-XSRFToken'] = xsrf[1];
      }
      const response = await window.fetch(this.settings.baseUrl + path, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        credentials: 'same-origin',
        keepalive
      });
      if (!response.ok) {
        throw new Error(`${path}: HTTP ${response.status}`);
      }
      return response.json();
    }
  }

  const plugin = {
    id: `${NAME}:plugin`,
    description: 'Course updates merged into the open notebooks, what the learner typed kept.',
    autoStart: true,
    activate: (app) => new Updates(app).start()
  };
  const modules = {
    './extension': () => () => ({ __esModule: true, default: [plugin] })
  };
  window._JUPYTERLAB = window._JUPYTERLAB || {};
  window._JUPYTERLAB[NAME] = {
    init: () => undefined, // nothing shared to receive or give
    get: (module) =>
      modules[module]
        ? Promise.resolve(modules[module]())
        : Promise.reject(new Error(`${NAME} has no module ${module}`))
  };
})();
