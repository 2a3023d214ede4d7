// The distance chart and the head list sit below the main map: bring the opened head into view.
() => document.querySelector('#attn-main').scrollIntoView({block: 'center'})
