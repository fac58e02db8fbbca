// Rename and delete a conversation: the same controls on the Conversations page (one set per row)
// and in the conversation view, so both say the same things and take the same steps.
//
// Rename is PATCH /v1/conversations/{id} with {"title": …} (an empty title removes it: null).
// Delete is DELETE /v1/conversations/{id} after a confirm in the page (not window.confirm: it
// blocks the page and cannot be styled or read by a screen reader's live region). A conversation
// with a turn that has not ended answers 409 CONVERSATION_BUSY; the controls then name the turns
// and offer "Cancel running and delete", which is DELETE …?cancel=true (the server cancels them
// first). A 404 means it is gone already (deleted elsewhere): that is what was asked.

import { request, ApiError, enc } from './api.js';
import { h, replace, errorText } from './dom.js';

// What the Conversations page says after a delete done in the conversation view (the view is
// left for the list, which reads and clears it).
let deletedNotice = '';
export function takeDeletedNotice() {
  const said = deletedNotice;
  deletedNotice = '';
  return said;
}
export function noteDeleted(text) { deletedNotice = text; }

// conversationName is what a conversation is called where a person reads it: its title, or a
// fallback that says there is none.
export function conversationName(c) {
  return c.title ? c.title : 'Untitled conversation';
}

// manageControls returns the controls for conversation c (id and title are read from it).
// onRenamed(conversation) gets the server's answer; onDeleted(text) is called once it is gone.
export function manageControls(c, { idPrefix, onRenamed, onDeleted }) {
  let current = c;
  const result = h('p', { class: 'manage-result', id: `${idPrefix}-result`, role: 'status', 'aria-live': 'polite' });
  const titleInput = h('input', { type: 'text', id: `${idPrefix}-title`, name: 'title', maxlength: 200, autocomplete: 'off' });
  const renameForm = h('form', { class: 'inline manage-rename', hidden: true, 'data-manage': 'rename-form' },
    h('label', { for: `${idPrefix}-title` }, 'Title '), titleInput,
    h('button', { type: 'submit', class: 'primary', 'data-manage': 'save' }, 'Save'),
    h('button', { type: 'button', 'data-manage': 'cancel-rename', onclick: () => closeRename() }, 'Cancel'));
  const confirmText = h('p', { class: 'manage-confirm-text' });
  const confirmButtons = h('div', { class: 'buttons' });
  const confirm = h('div', { class: 'manage-confirm', role: 'alertdialog', hidden: true, 'aria-label': 'Confirm deletion', 'data-manage': 'confirm' },
    confirmText, confirmButtons);
  const renameButton = h('button', { type: 'button', 'data-manage': 'rename', onclick: openRename }, 'Rename');
  const deleteButton = h('button', { type: 'button', class: 'danger', 'data-manage': 'delete', onclick: askDelete }, 'Delete');
  const box = h('div', { class: 'manage' }, h('div', { class: 'buttons' }, renameButton, deleteButton), renameForm, confirm, result);

  function say(text, error = false) {
    result.className = error ? 'manage-result error' : 'manage-result';
    result.textContent = text;
  }

  function openRename() {
    confirm.hidden = true;
    titleInput.value = current.title || '';
    renameForm.hidden = false;
    titleInput.focus();
    titleInput.select();
  }
  function closeRename() {
    renameForm.hidden = true;
    renameButton.focus();
  }
  titleInput.addEventListener('keydown', (e) => { if (e.key === 'Escape') { e.preventDefault(); closeRename(); } });
  renameForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const title = titleInput.value.trim();
    for (const el of renameForm.elements) el.disabled = true;
    try {
      current = await request('PATCH', `/conversations/${enc(current.id)}`, { title: title || null });
      renameForm.hidden = true;
      say(title ? `Renamed to “${title}”.` : 'The title was removed.');
      onRenamed(current);
      renameButton.focus();
    } catch (err) {
      say(`Not renamed: ${errorText(err)}`, true);
    } finally {
      for (const el of renameForm.elements) el.disabled = false;
    }
  });

  function askDelete() {
    renameForm.hidden = true;
    replace(confirmText, `Delete “${conversationName(current)}” and everything in it (its turns, their events and answers)? This cannot be undone.`);
    replace(confirmButtons,
      h('button', { type: 'button', class: 'danger', 'data-manage': 'confirm-delete', onclick: () => erase(false) }, 'Delete'),
      h('button', { type: 'button', 'data-manage': 'keep', onclick: keep }, 'Keep it'));
    confirm.hidden = false;
    confirmButtons.querySelector('[data-manage="keep"]').focus(); // the safe answer has the focus
  }
  function keep() {
    confirm.hidden = true;
    deleteButton.focus();
  }

  async function erase(cancelFirst) {
    for (const b of confirmButtons.querySelectorAll('button')) b.disabled = true;
    say('Deleting…');
    try {
      await request('DELETE', `/conversations/${enc(current.id)}${cancelFirst ? '?cancel=true' : ''}`);
      confirm.hidden = true;
      onDeleted(`Deleted “${conversationName(current)}” (${current.id}).`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        confirm.hidden = true;
        onDeleted(`“${conversationName(current)}” (${current.id}) was already deleted.`);
        return;
      }
      if (err instanceof ApiError && err.code === 'CONVERSATION_BUSY' && !cancelFirst) {
        const busy = (err.details && err.details.executionIds) || [];
        say('');
        replace(confirmText, `Not deleted: ${busy.join(', ') || 'a turn'} has not ended (${err.code}). `,
          'Cancel what is running, then delete the conversation?');
        replace(confirmButtons,
          h('button', { type: 'button', class: 'danger', 'data-manage': 'cancel-and-delete', onclick: () => erase(true) }, 'Cancel running and delete'),
          h('button', { type: 'button', 'data-manage': 'keep', onclick: keep }, 'Keep it'));
        confirmButtons.querySelector('[data-manage="keep"]').focus();
        return;
      }
      say(`Not deleted: ${errorText(err)}`, true);
      for (const b of confirmButtons.querySelectorAll('button')) b.disabled = false;
    }
  }

  return {
    box,
    // update keeps the controls on the newest version of the conversation (a rename elsewhere).
    update(next) { current = { ...current, ...next }; },
  };
}
